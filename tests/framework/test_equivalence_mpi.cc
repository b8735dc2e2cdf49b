// DYNAMIX — weighted averaging is exact: 4 ranks with batches {5, 17, 32, 64} take the same
// optimizer step as one process on the union batch of 118 (float64), also after a plan change;
// with the buckets reduced during backward (comm.overlap, the default) and after it.
#include <gtest/gtest.h>

#include "framework/comm/mpi_communicator.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/train/trainer.h"
#include "models/registry.h"
#include "tests/torch_cuda.h"

namespace dynamix {
namespace {

const char* kConfig = R"(
model: cnn
dataset: {name: synthetic, shape: [1, 12, 12], classes: 5, train_size: 1000, test_size: 40}
batch: {init: [5, 17, 32, 64], min: 1, max: 512}
train: {optimizer: sgd, lr: 0.05, momentum: 0.9, nesterov: true, weight_decay: 0.01, lr_scaling: linear}
monitor: {enabled: false}  # probes have their own tests; keep this one about the math
output: {dir: unused}
)";

double max_diff(Model& a, Model& b) {
  double worst = 0;
  auto pa = a.parameters(), pb = b.parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    worst = std::max(worst, (pa[i].cpu() - pb[i].cpu()).abs().max().item<double>());
  }
  return worst;
}

using testing::why_no_cuda;

struct Variant {
  bool overlap;
  bool channels_last;
  bool cuda = false;  // every rank on the node's GPU(s), MPI backend: buckets staged through pinned memory
};

class WeightedAveraging : public ::testing::TestWithParam<Variant> {};

TEST_P(WeightedAveraging, UnequalBatchesEqualOneProcessOnTheUnion) {
  MpiCommunicator comm;
  ASSERT_EQ(comm.size(), 4) << "run with mpirun -np 4";
  const auto [overlap, channels_last, cuda] = GetParam();
  if (cuda && !why_no_cuda().empty()) GTEST_SKIP() << "CUDA variant needs a GPU: " << why_no_cuda();
  if (overlap) ASSERT_TRUE(mpi_allows_comm_thread()) << "the overlapped path would not be taken";
  TrainOptions opts;
  opts.float64 = true;
  opts.write_outputs = false;
  opts.quiet = true;
  const auto flag = [](bool on) { return on ? std::string("true") : std::string("false"); };
  Trainer trainer(parse_config(kConfig, "test",
                               {"comm.overlap=" + flag(overlap), "train.channels_last=" + flag(channels_last),
                                "train.device=" + std::string(cuda ? "cuda" : "cpu")}),
                  comm, opts);
  trainer.setup();
  trainer.prepare();
  const torch::Device device = trainer.device();
  ASSERT_EQ(device.is_cuda(), cuda);
  if (channels_last) {
    const auto w = trainer.model().parameters()[2];  // the second convolution (16 input channels)
    ASSERT_EQ(w.dim(), 4);
    ASSERT_TRUE(w.is_contiguous(torch::MemoryFormat::ChannelsLast) && !w.is_contiguous());
  }

  // The reference: one process, same initial weights, the union of all ranks' samples.
  const Dataset& data = trainer.train_set();
  ModelPtr ref = make_model("cnn", ModelSpec{data.sample_shape(), data.num_classes(), "classify"});
  ref->to(device);
  ref->to(torch::kFloat64);
  {
    torch::NoGradGuard g;
    auto src = trainer.model().parameters();
    auto dst = ref->parameters();
    for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
  }
  torch::optim::SGD ref_opt(ref->parameters(),
                            torch::optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(0.01));
  auto reference_step = [&](double lr) {
    const StepAssignment& a = trainer.last_assignment();
    std::vector<int64_t> all;
    for (int r = 0; r < 4; ++r) {
      const auto idx = trainer.sampler().indices(a, r);
      all.insert(all.end(), idx.begin(), idx.end());
    }
    ASSERT_EQ(static_cast<int64_t>(all.size()), a.total());
    Batch b = data.get(all, trainer.data_seed(a.epoch));
    ref_opt.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(ref->forward(b.inputs.to(device).to(torch::kFloat64)),
                                                     b.targets.to(device));
    loss.backward();
    for (auto& g : ref_opt.param_groups()) g.options().set_lr(lr);
    ref_opt.step();
  };

  const double lr1 = trainer.current_lr();
  trainer.step();
  EXPECT_EQ(trainer.last_assignment().total(), 118);
  reference_step(lr1);
  const double d1 = max_diff(trainer.model(), *ref);
  EXPECT_LT(d1, 1e-12) << "after one step";

  // A plan change mid-run (same B, other split), then a different B (lr follows linearly).
  for (const auto& plan : {std::vector<int32_t>{64, 32, 17, 5}, std::vector<int32_t>{1, 2, 3, 90}}) {
    trainer.set_plan(plan);
    const double lr = trainer.current_lr();
    trainer.step();
    reference_step(lr);
    EXPECT_LT(max_diff(trainer.model(), *ref), 1e-12) << "after plan " << plan[0] << "," << plan[3];
  }
  // The check can fail: replicas moved, so a wrong weighting would show.
  EXPECT_GT(trainer.model().parameters()[0].abs().sum().item<double>(), 0.0);
}

// The reference model stays contiguous: channels_last must not change the step.
INSTANTIATE_TEST_SUITE_P(Paths, WeightedAveraging,
                         ::testing::Values(Variant{true, false}, Variant{false, false}, Variant{true, true},
                                           Variant{true, false, true}, Variant{false, false, true},
                                           Variant{true, true, true}),
                         [](const auto& info) {
                           return std::string(info.param.overlap ? "DuringBackward" : "AfterBackward") +
                                  (info.param.channels_last ? "ChannelsLast" : "") +
                                  (info.param.cuda ? "OnCuda" : "");
                         });

TEST(Bf16Autocast, TrainsWithIdenticalFloat32Replicas) {
  MpiCommunicator comm;
  TrainOptions opts;
  opts.write_outputs = false;
  opts.quiet = true;
  Trainer trainer(parse_config(kConfig, "test", {"train.precision=bf16", "batch.init=[16, 16, 16, 16]"}),
                  comm, opts);
  trainer.setup();
  trainer.prepare();
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(trainer.step());
  // Replicas agree exactly (same averaged gradient applied everywhere) and stayed float32. The
  // comparison goes through host memory: MPI takes host pointers (train.device is auto, so this
  // trains on the GPU where there is one).
  for (auto& p : trainer.model().parameters()) {
    ASSERT_EQ(p.scalar_type(), torch::kFloat32);
    auto mine = p.detach().cpu().contiguous().clone();
    auto root = mine.clone();
    comm.broadcast(root.data_ptr(), static_cast<size_t>(root.numel()), DType::kFloat32, 0);
    EXPECT_TRUE(torch::equal(mine, root));
    EXPECT_TRUE(torch::isfinite(mine).all().item<bool>());
  }
}

TEST(Fp16AutocastOnCuda, LossScalingTrainsIdenticalFloat32Replicas) {
  if (!why_no_cuda().empty()) GTEST_SKIP() << "fp16 autocast needs a GPU: " << why_no_cuda();
  MpiCommunicator comm;
  TrainOptions opts;
  opts.write_outputs = false;
  opts.quiet = true;
  Trainer trainer(parse_config(kConfig, "test",
                               {"train.device=cuda", "train.precision=fp16", "batch.init=[16, 16, 16, 16]"}),
                  comm, opts);
  trainer.setup();
  trainer.prepare();
  ASSERT_TRUE(trainer.loss_scaler().enabled())
      << "fp16 turns dynamic loss scaling on (train.loss_scale: auto)";
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(trainer.step());
  EXPECT_LT(trainer.loss_scaler().skipped_steps(), 8);
  for (auto& p : trainer.model().parameters()) {
    ASSERT_EQ(p.scalar_type(), torch::kFloat32);
    auto mine = p.detach().cpu().contiguous().clone();
    auto root = mine.clone();
    comm.broadcast(root.data_ptr(), static_cast<size_t>(root.numel()), DType::kFloat32, 0);
    EXPECT_TRUE(torch::equal(mine, root));
    EXPECT_TRUE(torch::isfinite(mine).all().item<bool>());
  }
}

}  // namespace
}  // namespace dynamix
