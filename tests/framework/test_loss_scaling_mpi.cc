// DYNAMIX — dynamic loss scaling (mpirun -np 2): the scaler's rules; training under a power-of-two
// scale is bit-identical to training without it (scaling by 2^k commutes with rounding, and the
// 1/S rides on the packing weight), at one rank and at two with the buckets reduced during
// backward; a scale that overflows float32 skips steps on every rank alike, leaves the weights
// untouched, and backs off until training goes on.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "framework/comm/mpi_communicator.h"
#include "framework/core/error.h"
#include "framework/train/loss_scaler.h"
#include "framework/train/trainer.h"

namespace dynamix {
namespace {

TEST(LossScaler, DisabledAppliesEverythingAtScaleOne) {
  LossScaler s;
  EXPECT_FALSE(s.enabled());
  EXPECT_EQ(s.scale(), 1.0);
  EXPECT_TRUE(s.update(false));  // as before loss scaling existed: nothing is skipped
  EXPECT_EQ(s.skipped_steps(), 0);
}

TEST(LossScaler, BacksOffOnOverflowAndGrowsAfterTheInterval) {
  LossScaleOptions o;
  o.enabled = true;
  o.init = 1024;
  o.growth_interval = 3;
  LossScaler s(o);
  EXPECT_EQ(s.scale(), 1024);
  EXPECT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 512);
  EXPECT_TRUE(s.update(true));
  EXPECT_TRUE(s.update(true));
  EXPECT_EQ(s.scale(), 512);
  EXPECT_TRUE(s.update(true));  // third finite step in a row
  EXPECT_EQ(s.scale(), 1024);
  EXPECT_EQ(s.good_steps(), 0);
  EXPECT_TRUE(s.update(true));
  EXPECT_FALSE(s.update(false));  // an overflow resets the run of good steps
  EXPECT_EQ(s.good_steps(), 0);
  EXPECT_EQ(s.scale(), 512);
  EXPECT_EQ(s.skipped_steps(), 2);
}

TEST(LossScaler, NeverBelowOneAndRestoresOnlyValidState) {
  LossScaleOptions o;
  o.enabled = true;
  o.init = 2;
  LossScaler s(o);
  for (int i = 0; i < 5; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 1.0);
  s.restore(4096, 7, 3);
  EXPECT_EQ(s.scale(), 4096);
  EXPECT_EQ(s.good_steps(), 7);
  EXPECT_EQ(s.skipped_steps(), 3);
  EXPECT_THROW(s.restore(0.5, 0, 0), Error);
  EXPECT_THROW(s.restore(std::numeric_limits<double>::infinity(), 0, 0), Error);
  EXPECT_THROW(s.restore(8, -1, 0), Error);
}

const char* kLossScalingConfig = R"(
model: cnn
dataset: {name: synthetic, shape: [1, 12, 12], classes: 5, train_size: 600, test_size: 40}
batch: {init: [24, 40], min: 1, max: 256}
train: {optimizer: sgd, lr: 0.05, momentum: 0.9, seed: 11}
monitor: {enabled: false}
output: {dir: unused}
)";

std::unique_ptr<Trainer> make_trainer(Communicator& comm, std::vector<std::string> overrides) {
  TrainOptions opts;
  opts.write_outputs = false;
  opts.quiet = true;
  if (comm.size() == 1) overrides.push_back("batch.init=[32]");
  auto t = std::make_unique<Trainer>(parse_config(kLossScalingConfig, "test", overrides), comm, opts);
  t->setup();
  t->prepare();
  return t;
}

std::vector<torch::Tensor> weights(Trainer& t) {
  std::vector<torch::Tensor> out;
  for (const auto& p : t.model().parameters()) out.push_back(p.detach().clone());
  return out;
}

void expect_bit_identical(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i;
}

// 6 steps without scaling and 6 with S = 1024 doubling every 2 steps (1024 -> 8192).
void power_of_two_scaling_is_exact(Communicator& comm) {
  // Bit-identity across two runs needs kernels that sum in the same order each time: one
  // intra-op thread (a loaded machine failed this once with the default threads).
  torch::set_num_threads(1);
  auto plain = make_trainer(comm, {"train.loss_scale=none"});
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(plain->step());
  auto scaled = make_trainer(
      comm, {"train.loss_scale=dynamic", "train.loss_scale_init=1024", "train.loss_scale_growth_interval=2"});
  ASSERT_TRUE(scaled->loss_scaler().enabled());
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(scaled->step());
    EXPECT_TRUE(scaled->last_step_applied());
  }
  EXPECT_EQ(scaled->loss_scaler().scale(), 8192);
  EXPECT_EQ(scaled->loss_scaler().skipped_steps(), 0);
  expect_bit_identical(weights(*plain), weights(*scaled));
}

TEST(LossScaling, PowerOfTwoScaleTrainsBitIdenticallyAtOneRank) {
  MpiCommunicator self(MPI_COMM_SELF);
  power_of_two_scaling_is_exact(self);
}

TEST(LossScaling, PowerOfTwoScaleTrainsBitIdenticallyAtTwoRanksDuringBackward) {
  MpiCommunicator comm;
  ASSERT_EQ(comm.size(), 2) << "run with mpirun -np 2";
  power_of_two_scaling_is_exact(comm);
}

TEST(LossScaling, OverflowSkipsTheStepOnEveryRankAndBacksOff) {
  MpiCommunicator comm;
  // float32 max is 3.4e38: S = 1e39 and 5e38 are infinite in float32, so backward starts from an
  // infinite gradient and the first two steps must be skipped; from 2.5e38 on it depends on the
  // gradients' size.
  auto t = make_trainer(comm, {"train.loss_scale=dynamic", "train.loss_scale_init=1e39"});
  int skipped = 0, applied = 0;
  for (int i = 0; i < 60 && applied < 5; ++i) {
    const auto before = weights(*t);
    const double scale = t->loss_scaler().scale();
    ASSERT_TRUE(t->step());
    int mine = t->last_step_applied() ? 1 : 0, all = mine;
    comm.allreduce_sum(&all, 1, DType::kInt32);
    ASSERT_EQ(all, mine * comm.size()) << "ranks disagree on skipping step " << i;
    if (t->last_step_applied()) {
      ++applied;
      EXPECT_EQ(t->loss_scaler().scale(), scale);
    } else {
      ++skipped;
      expect_bit_identical(before, weights(*t));
      EXPECT_EQ(t->loss_scaler().scale(), scale / 2);
    }
  }
  EXPECT_GE(skipped, 2);
  EXPECT_EQ(applied, 5) << "the scale never came down far enough to train";
  EXPECT_EQ(t->loss_scaler().skipped_steps(), skipped);
  for (const auto& p : t->model().parameters()) EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
}

}  // namespace
}  // namespace dynamix
