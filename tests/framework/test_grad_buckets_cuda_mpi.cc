// DYNAMIX — gradient buckets on a CUDA device (mpirun -np 2, both ranks may share one GPU):
// packed and unpacked by the CUDA kernels, reduced through pinned host copies over MPI or in
// place by NCCL (one 1-rank NCCL communicator per process), after backward and during it. The
// reduced gradients equal the CPU path's bit for bit. Skips, saying why, without a CUDA device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/comm/mpi_communicator.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/train/grad_buckets.h"
#include "tests/torch_cuda.h"

#if DYNAMIX_HAVE_NCCL
#include "framework/comm/nccl_communicator.h"
#endif

namespace dynamix {
namespace {

using testing::why_no_cuda;

#define SKIP_WITHOUT_CUDA()                                                    \
  do {                                                                         \
    const std::string why = why_no_cuda();                                     \
    if (!why.empty()) GTEST_SKIP() << "CUDA bucket tests need a GPU: " << why; \
  } while (0)

// Registered in an order unlike their use, a channels_last 4-D weight, and a parameter the loss
// never touches.
struct DeviceNet {
  torch::Tensor w_last, conv, w_first, unused;
  std::vector<torch::Tensor> params() const { return {w_last, conv, w_first, unused}; }

  DeviceNet(uint64_t seed, const torch::Device& device) {
    torch::manual_seed(seed);
    const auto on = torch::TensorOptions().device(device);
    w_last = torch::randn({4, 6 * 4 * 4}).to(on.device()).requires_grad_();
    conv = torch::randn({6, 3, 3, 3})
               .to(on.device())
               .contiguous(torch::MemoryFormat::ChannelsLast)
               .requires_grad_();
    w_first = torch::randn({3 * 4 * 4, 3 * 4 * 4}).to(on.device()).requires_grad_();
    unused = torch::randn({5}).to(on.device()).requires_grad_();
  }
  torch::Tensor loss(const torch::Tensor& x) const {  // x: [n, 48]
    auto h = torch::tanh(x.matmul(w_first.t())).reshape({-1, 3, 4, 4});
    h = torch::tanh(torch::conv2d(h, conv, {}, 1, 1));
    return h.reshape({h.size(0), -1}).matmul(w_last.t()).pow(2).mean();
  }
};

torch::Tensor batch(int rank, int step) {
  torch::manual_seed(500 + 31 * step + rank);
  return torch::randn({3 + 2 * rank, 48});
}

double weight_of(const Communicator& comm) {
  int total = 0;
  for (int r = 0; r < comm.size(); ++r) total += 3 + 2 * r;
  return static_cast<double>(3 + 2 * comm.rank()) / total;
}

constexpr double kSmallBuckets = 0.002;  // several buckets of a few parameters

// Gives the CUDA net the CPU net's gradients (so both paths reduce the same numbers).
void copy_grads(const DeviceNet& from, DeviceNet& to) {
  auto src = from.params(), dst = to.params();
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i].grad().defined()) dst[i].mutable_grad() = src[i].grad().to(dst[i].device());
  }
}

void expect_same_grads(const DeviceNet& cpu, const DeviceNet& cuda) {
  auto a = cpu.params(), b = cuda.params();
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(b[i].grad().defined()) << "parameter " << i;
    EXPECT_TRUE(torch::equal(a[i].grad(), b[i].grad().cpu())) << "parameter " << i;
    EXPECT_EQ(b[i].grad().strides(), b[i].strides()) << "parameter " << i;
  }
}

// After backward: CUDA buckets (kernels, `comm`) against CPU buckets over MPI.
void after_backward_matches_cpu(Communicator& comm) {
  MpiCommunicator mpi;
  const torch::Device gpu(torch::kCUDA, 0);
  DeviceNet cpu(3, torch::kCPU), cuda(3, gpu);
  GradBuckets cpu_buckets(cpu.params(), kSmallBuckets, mpi), cuda_buckets(cuda.params(), kSmallBuckets, comm);
  ASSERT_GT(cuda_buckets.num_buckets(), 2u);
  for (int step = 0; step < 3; ++step) {
    for (auto* n : {&cpu, &cuda}) {
      for (auto& p : n->params()) p.mutable_grad() = torch::Tensor();
    }
    cpu.loss(batch(mpi.rank(), step)).backward();
    copy_grads(cpu, cuda);
    const ReduceResult c = cpu_buckets.reduce(weight_of(mpi));
    const ReduceResult g = cuda_buckets.reduce(weight_of(mpi));
    expect_same_grads(cpu, cuda);
    EXPECT_NEAR(g.local_sq_norm, c.local_sq_norm, 1e-9 * c.local_sq_norm);
    EXPECT_NEAR(g.global_sq_norm, c.global_sq_norm, 1e-9 * c.global_sq_norm);
  }
}

TEST(GradBucketsCuda, AfterBackwardThroughPinnedHostBuffersOverMpi) {
  SKIP_WITHOUT_CUDA();
  MpiCommunicator mpi;
  after_backward_matches_cpu(mpi);
}

TEST(GradBucketsCuda, DuringBackwardThroughPinnedHostBuffersOverMpi) {
  SKIP_WITHOUT_CUDA();
  ASSERT_TRUE(mpi_allows_comm_thread());
  MpiCommunicator mpi;
  const torch::Device gpu(torch::kCUDA, 0);
  // The same CUDA backward twice: once reduced during it, once after it.
  DeviceNet during(5, gpu), after(5, gpu);
  GradBuckets overlapped(during.params(), kSmallBuckets, mpi), plain(after.params(), kSmallBuckets, mpi);
  overlapped.enable_overlap({});
  for (int step = 0; step < 3; ++step) {  // the second and third after the rebuild
    for (auto* n : {&during, &after}) {
      for (auto& p : n->params()) p.mutable_grad() = torch::Tensor();
    }
    const auto x = batch(mpi.rank(), step).to(gpu);
    overlapped.begin(weight_of(mpi));
    during.loss(x).backward();
    const ReduceResult a = overlapped.finish(true);
    after.loss(x).backward();
    const ReduceResult b = plain.reduce(weight_of(mpi));
    auto pa = during.params(), pb = after.params();
    for (size_t i = 0; i < pa.size(); ++i) {
      EXPECT_TRUE(torch::equal(pa[i].grad(), pb[i].grad())) << "step " << step << " parameter " << i;
    }
    EXPECT_NEAR(a.global_sq_norm, b.global_sq_norm, 1e-9 * b.global_sq_norm);
    EXPECT_NEAR(a.local_sq_norm, b.local_sq_norm, 1e-9 * b.local_sq_norm);
  }
}

#if DYNAMIX_HAVE_NCCL
TEST(GradBucketsCuda, AfterBackwardInPlaceWithNccl) {
  SKIP_WITHOUT_CUDA();
  NcclCommunicator nccl(MPI_COMM_SELF, 0);  // one rank: the SUM is the packed bucket itself
  MpiCommunicator self(MPI_COMM_SELF);
  const torch::Device gpu(torch::kCUDA, 0);
  DeviceNet cpu(9, torch::kCPU), cuda(9, gpu);
  GradBuckets cpu_buckets(cpu.params(), kSmallBuckets, self),
      cuda_buckets(cuda.params(), kSmallBuckets, nccl);
  cpu.loss(batch(0, 0)).backward();
  copy_grads(cpu, cuda);
  const ReduceResult c = cpu_buckets.reduce(0.25);
  const ReduceResult g = cuda_buckets.reduce(0.25);
  expect_same_grads(cpu, cuda);
  EXPECT_NEAR(g.global_sq_norm, c.global_sq_norm, 1e-9 * c.global_sq_norm);
  EXPECT_GT(g.bytes, 0u);
}

TEST(GradBucketsCuda, DuringBackwardWithNcclJoinsBeforeUnpacking) {
  SKIP_WITHOUT_CUDA();
  NcclCommunicator nccl(MPI_COMM_SELF, 0);
  const torch::Device gpu(torch::kCUDA, 0);
  DeviceNet during(11, gpu), after(11, gpu);
  GradBuckets overlapped(during.params(), kSmallBuckets, nccl), plain(after.params(), kSmallBuckets, nccl);
  overlapped.enable_overlap({});
  for (int step = 0; step < 3; ++step) {
    for (auto* n : {&during, &after}) {
      for (auto& p : n->params()) p.mutable_grad() = torch::Tensor();
    }
    const auto x = batch(0, step).to(gpu);
    overlapped.begin(0.5);
    during.loss(x).backward();
    overlapped.finish(true);
    after.loss(x).backward();
    plain.reduce(0.5);
    auto pa = during.params(), pb = after.params();
    for (size_t i = 0; i < pa.size(); ++i) {
      EXPECT_TRUE(torch::equal(pa[i].grad(), pb[i].grad())) << "step " << step << " parameter " << i;
    }
  }
  EXPECT_TRUE(nccl.check_async_error().empty());
}
#endif

}  // namespace
}  // namespace dynamix
