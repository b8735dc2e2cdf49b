// DYNAMIX — the emulated device-memory cap: allocations past it fail with LibTorch's own
// out-of-memory error, freed tensors give their bytes back, and ordinary kernels (which may use
// the allocator's raw interface) run under it.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "framework/train/memory_cap.h"

namespace dynamix {
namespace {

TEST(MemoryCap, AllocationsPastTheCapRaiseOutOfMemoryAndFreedBytesReturn) {
  install_cpu_memory_cap(1 << 20);
  const size_t base = capped_bytes_in_use();
  {
    auto a = torch::zeros({128 * 1024}, torch::kFloat32);  // 512 KiB
    EXPECT_EQ(capped_bytes_in_use(), base + 512 * 1024);
    EXPECT_THROW(torch::zeros({180 * 1024}, torch::kFloat32), c10::OutOfMemoryError);  // 720 KiB more
    EXPECT_EQ(capped_bytes_in_use(), base + 512 * 1024);  // the failed attempt is not counted
  }
  EXPECT_EQ(capped_bytes_in_use(), base);
  auto b = torch::zeros({180 * 1024}, torch::kFloat32);  // fits once the first is gone
  EXPECT_EQ(b.sum().item<float>(), 0.0f);
  install_cpu_memory_cap(~size_t{0});
}

TEST(MemoryCap, ConvolutionForwardAndBackwardRunUnderTheCap) {
  install_cpu_memory_cap(64 << 20);
  torch::manual_seed(0);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(1, 8, 3).padding(1));
  auto x = torch::randn({16, 1, 28, 28});
  auto loss = torch::relu(conv->forward(x)).mean();
  loss.backward();
  EXPECT_TRUE(conv->weight.grad().defined());
  EXPECT_GT(capped_bytes_in_use(), 0u);
  // A batch far too large for the cap fails inside the forward pass, as on a small GPU.
  auto big = torch::randn({4096, 1, 28, 28});
  EXPECT_THROW(conv->forward(big), c10::OutOfMemoryError);
  install_cpu_memory_cap(~size_t{0});
}

}  // namespace
}  // namespace dynamix
