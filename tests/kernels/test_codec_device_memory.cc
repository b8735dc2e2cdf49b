// DYNAMIX — which codecs take device buckets (GradientCodec::accepts_device_memory), and hlc's host
// path on a host bucket in a build with the CUDA kernels (on a machine without a GPU, the device
// check must fall through to the host path). No MPI: a one-rank loopback communicator.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "framework/comm/compression/codec.h"

namespace dynamix {
namespace {

// One rank: every collective leaves the buffer as it is.
class Loopback final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "loopback"; }
  void allreduce_sum(void*, size_t, DType) override { ++collectives; }
  void allreduce_max(void*, size_t, DType) override { ++collectives; }
  void broadcast(void*, size_t, DType, int) override { ++collectives; }
  void gather(const void* send, size_t bytes, void* recv, int) override { allgather(send, bytes, recv); }
  void allgather(const void* send, size_t bytes, void* recv) override {
    std::memcpy(recv, send, bytes);
    ++collectives;
  }
  void barrier() override {}
  int collectives = 0;
};

TEST(CodecDeviceMemory, OnlyHlcWithTheCudaKernelsTakesDeviceBuckets) {
  EXPECT_FALSE(make_codec(Compression::kNone)->accepts_device_memory());
  EXPECT_FALSE(make_codec(Compression::kFp16)->accepts_device_memory());
  EXPECT_FALSE(make_codec(Compression::kBf16)->accepts_device_memory());
  EXPECT_EQ(make_codec(Compression::kHlc)->accepts_device_memory(), DYNAMIX_EXPECT_HLC_DEVICE != 0);
}

// One rank: every on-grid value is its own exact sum and off-grid values pass through the float
// round, so the bucket comes back bit for bit (-0 as +0), through all six rounds.
TEST(CodecDeviceMemory, HlcHostBucketStaysOnTheHostPath) {
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::bernoulli_distribution keep(0.05);
  std::vector<float> grad(20000, 0.0f);
  for (float& v : grad) v = keep(gen) ? value(gen) : 0.0f;
  grad[7] = 1e-35f;  // off the grid
  grad[8] = -0.0f;
  CodecOptions options;
  options.hlc_auto = false;
  options.hlc_ratio = 0.5;  // some entries do not peel
  auto codec = make_codec(Compression::kHlc, options);
  std::vector<float> out = grad;
  Loopback comm;
  CodecStats stats;
  codec->allreduce_sum(out.data(), out.size(), comm, &stats);
  EXPECT_EQ(stats.path, "hlc");
  EXPECT_EQ(stats.rounds, 6);
  EXPECT_EQ(comm.collectives, 6);
  EXPECT_EQ(stats.off_grid_count, 1u);
  EXPECT_GT(stats.fallback_count, 1u);
  size_t differ = 0;
  for (size_t i = 0; i < grad.size(); ++i) {
    const float expect = grad[i] == 0.0f ? 0.0f : grad[i];
    differ += std::memcmp(&expect, &out[i], sizeof(float)) != 0;
  }
  EXPECT_EQ(differ, 0u);
}

}  // namespace
}  // namespace dynamix
