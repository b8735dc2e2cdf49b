// DYNAMIX — gradient buckets reduced during backward (autograd hooks + comm thread) give the
// same gradients, bit for bit, as packing and reducing after backward; buckets are rebuilt in
// arrival order after the first step; a bucket is reduced while backward is still running; a rank
// without a backward, or whose backward failed, still completes the step's collectives.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "framework/comm/mpi_communicator.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/train/grad_buckets.h"

namespace dynamix {
namespace {

// Registered in an order unlike their use, plus one parameter the loss never touches.
struct Net {
  torch::Tensor w_last, w_first, w_mid, unused;
  std::vector<torch::Tensor> params() const { return {w_last, w_first, w_mid, unused}; }

  explicit Net(uint64_t seed) {
    torch::manual_seed(seed);
    w_last = torch::randn({4, 16}).requires_grad_();
    w_first = torch::randn({16, 8}).requires_grad_();
    w_mid = torch::randn({16, 16}).requires_grad_();
    unused = torch::randn({5}).requires_grad_();
  }
  torch::Tensor loss(const torch::Tensor& x) const {
    auto h = torch::tanh(x.matmul(w_first.t()));
    h = torch::tanh(h.matmul(w_mid.t()));
    return h.matmul(w_last.t()).pow(2).mean();
  }
  void clear_grads() {
    for (auto& p : params()) p.mutable_grad() = torch::Tensor();
  }
};

constexpr double kTinyBuckets = 1e-6;  // one parameter per bucket: same message sizes on both paths

struct Fixture {
  MpiCommunicator comm;
  Net net{7}, ref{7};  // same initial values on every rank and in both copies
  GradBuckets overlapped{net.params(), kTinyBuckets, comm};
  GradBuckets after{ref.params(), kTinyBuckets, comm};

  Fixture() { overlapped.enable_overlap({}); }
  int rank() const { return comm.rank(); }
  int64_t samples(int r) const { return 3 + 2 * r; }
  double weight() const {
    int64_t total = 0;
    for (int r = 0; r < comm.size(); ++r) total += samples(r);
    return static_cast<double>(samples(rank())) / static_cast<double>(total);
  }
  torch::Tensor batch(int step) const {
    torch::manual_seed(1000 + 17 * step + rank());
    return torch::randn({samples(rank()), 8});
  }
};

void expect_same_grads(const Net& a, const Net& b, const std::string& where) {
  auto pa = a.params(), pb = b.params();
  for (size_t i = 0; i < pa.size(); ++i) {
    ASSERT_TRUE(pa[i].grad().defined()) << where << ": parameter " << i;
    EXPECT_TRUE(torch::equal(pa[i].grad(), pb[i].grad())) << where << ": parameter " << i << " differs";
  }
}

TEST(GradBucketsOverlap, SameGradientsAsReducingAfterBackwardAndRebuildsInArrivalOrder) {
  ASSERT_TRUE(mpi_allows_comm_thread());
  Fixture f;
  ASSERT_EQ(f.overlapped.num_buckets(), 4u);
  for (int step = 0; step < 3; ++step) {
    const auto x = f.batch(step);
    f.net.clear_grads();
    f.ref.clear_grads();
    f.overlapped.begin(f.weight());
    f.net.loss(x).backward();
    const ReduceResult a = f.overlapped.finish(true);
    f.ref.loss(x).backward();
    const ReduceResult b = f.after.reduce(f.weight());
    expect_same_grads(f.net, f.ref, "step " + std::to_string(step));
    EXPECT_NEAR(a.local_sq_norm, b.local_sq_norm, 1e-9 * b.local_sq_norm);
    EXPECT_NEAR(a.global_sq_norm, b.global_sq_norm, 1e-9 * b.global_sq_norm);
    EXPECT_GT(b.global_sq_norm, 0.0);
    EXPECT_EQ(a.bytes, b.bytes);
    EXPECT_EQ(a.wire_bytes, b.wire_bytes);
    // The weights moved: the unused parameter's average is zero, the others' are not.
    EXPECT_EQ(f.net.unused.grad().abs().sum().item<double>(), 0.0);
    if (step == 0) {
      // Backward produced w_last (0), w_mid (2), w_first (1); the unused one (3) comes last.
      const std::vector<std::vector<size_t>> want = {{0}, {2}, {1}, {3}};
      EXPECT_EQ(f.overlapped.layout(), want);
      EXPECT_EQ(f.after.layout(), (std::vector<std::vector<size_t>>{{3}, {2}, {1}, {0}}));
    }
    // Apply an SGD step on both so the next step starts from new weights.
    torch::NoGradGuard g;
    for (auto* net : {&f.net, &f.ref}) {
      for (auto& p : net->params()) p.sub_(0.1 * p.grad());
    }
  }
}

TEST(GradBucketsOverlap, BucketIsReducedWhileBackwardIsStillRunning) {
  Fixture f;
  std::atomic<int> reduced{0};
  GradBuckets probe(f.net.params(), kTinyBuckets, f.comm);
  OverlapHooks hooks;
  hooks.after_bucket = [&](size_t, double) { reduced.fetch_add(1); };
  probe.enable_overlap(hooks);
  probe.begin(f.weight());
  // Its first step rebuilds the buckets in arrival order (before, the unused parameter's bucket
  // comes first and holds every other bucket back until backward ends).
  f.net.loss(f.batch(0)).backward();
  probe.finish(true);
  reduced = 0;

  // w_first's gradient comes last; when it arrives, w_last's bucket (first) must be reducible
  // without waiting for backward to end: wait for it inside the hook.
  bool seen_during_backward = false;
  const unsigned h = f.net.w_first.register_hook([&](const torch::Tensor&) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (reduced.load() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    seen_during_backward = reduced.load() > 0;
  });
  f.net.clear_grads();
  probe.begin(f.weight());
  f.net.loss(f.batch(1)).backward();
  probe.finish(true);
  f.net.w_first.remove_hook(h);
  EXPECT_TRUE(seen_during_backward) << "no bucket was reduced before backward ended";
  EXPECT_EQ(reduced.load(), 4);
}

TEST(GradBucketsOverlap, RankWithoutBackwardContributesZeros) {
  Fixture f;
  for (int step = 0; step < 2; ++step) {
    const auto x = f.batch(step);
    const bool idle = f.rank() == 1;  // no samples in this step
    f.net.clear_grads();
    f.ref.clear_grads();
    f.overlapped.begin(idle ? 0.0 : f.weight());
    if (!idle) f.net.loss(x).backward();
    f.overlapped.finish(true);
    if (!idle) f.ref.loss(x).backward();
    f.after.reduce(idle ? 0.0 : f.weight());
    expect_same_grads(f.net, f.ref, "step " + std::to_string(step));
  }
}

TEST(GradBucketsOverlap, FailedBackwardStillCompletesTheStep) {
  Fixture f;
  // Rank 1's backward throws after w_last's gradient was packed (as an out-of-memory would).
  const unsigned h = f.net.w_mid.register_hook([&](const torch::Tensor&) {
    if (f.rank() == 1) throw std::runtime_error("injected failure");
  });
  f.overlapped.begin(f.weight());
  bool threw = false;
  try {
    f.net.loss(f.batch(0)).backward();
  } catch (const std::exception&) {
    threw = true;
  }
  EXPECT_EQ(threw, f.rank() == 1);
  f.overlapped.finish(!threw);  // every rank's collectives complete; no hang
  f.net.w_mid.remove_hook(h);

  // The next step is normal again on every rank.
  f.net.clear_grads();
  const auto x = f.batch(1);
  f.overlapped.begin(f.weight());
  f.net.loss(x).backward();
  f.overlapped.finish(true);
  f.ref.loss(x).backward();
  f.after.reduce(f.weight());
  expect_same_grads(f.net, f.ref, "step after the failure");
}

TEST(GradBuckets, GradientsDifferingOnlyInSizeOneStridesArePackedAsTheyAre) {
  // A 1x1 convolution's weight under channels_last: the weight [4, 3, 1, 1] keeps strides
  // (3, 1, 1, 1) (it is channels_last-contiguous already), while cuDNN makes its gradient with
  // (3, 1, 3, 3) and AccumulateGrad keeps that. Same memory order: both paths must take it.
  MpiCommunicator comm;
  auto w = torch::randn({4, 3, 1, 1}).requires_grad_();
  ASSERT_EQ(w.strides(), (std::vector<int64_t>{3, 1, 1, 1}));
  const auto value = torch::arange(12, torch::kFloat32).reshape({4, 3, 1, 1}) * (comm.rank() + 1);
  auto grad_like_cudnn = [&] { return torch::empty_strided({4, 3, 1, 1}, {3, 1, 3, 3}).copy_(value); };
  double ranks_sum = 0;  // sum over ranks of (r + 1)
  for (int r = 0; r < comm.size(); ++r) ranks_sum += r + 1;
  const auto want = torch::arange(12, torch::kFloat32).reshape({4, 3, 1, 1}) * (0.5 * ranks_sum);

  GradBuckets after({w}, 1.0, comm);
  w.mutable_grad() = grad_like_cudnn();
  after.reduce(0.5);
  EXPECT_TRUE(torch::equal(w.grad(), want));

  GradBuckets during({w}, 1.0, comm);
  during.enable_overlap({});
  w.mutable_grad() = torch::Tensor();
  during.begin(0.5);
  w.backward(grad_like_cudnn());  // the hook sees the gradient as given
  during.finish(true);
  EXPECT_TRUE(torch::equal(w.grad(), want));
}

}  // namespace
}  // namespace dynamix
