// DYNAMIX — the plan rank 0's policy chooses is the one every rank trains with in the next window.
#include <gtest/gtest.h>

#include "framework/comm/mpi_communicator.h"
#include "framework/train/trainer.h"

namespace dynamix {
namespace {

const char* kPlanConfig = R"(
model: mlp
dataset: {name: synthetic, shape: [1, 8, 8], classes: 3, train_size: 4000, test_size: 40}
batch: {init: 16, min: 2, max: 64, global: fixed}
train: {max_steps: 21, epochs: 100, lr: 0.01}
policy: {name: proportional, window: 10}
hetero: {slowdown: [1.0, 1.0, 1.0, 6.0]}
monitor: {enabled: false}  # probes have their own tests; keep this one about the math
output: {dir: unused}
)";

TEST(PlanBroadcast, EveryRankUsesRankZerosDecision) {
  MpiCommunicator comm;
  ASSERT_EQ(comm.size(), 4) << "run with mpirun -np 4";
  TrainOptions opts;
  opts.write_outputs = false;
  opts.quiet = true;
  Trainer trainer(parse_config(kPlanConfig, "test"), comm, opts);
  trainer.setup();
  trainer.prepare();
  trainer.run();  // 21 steps: decisions after steps 10 and 20, step 21 runs the last plan

  const std::vector<int32_t> plan = trainer.plan();
  std::vector<int32_t> all(4 * plan.size());
  comm.allgather(plan.data(), plan.size() * sizeof(int32_t), all.data());
  for (int r = 1; r < 4; ++r) {
    EXPECT_EQ(std::vector<int32_t>(all.begin() + r * 4, all.begin() + (r + 1) * 4), plan) << "rank " << r;
  }
  // The slowed rank got less work, the global batch stayed, and the last step used the plan.
  EXPECT_LT(plan[3], 16);
  EXPECT_EQ(plan[0] + plan[1] + plan[2] + plan[3], 64);
  EXPECT_EQ(trainer.last_assignment().counts, plan);
}

TEST(PlanBroadcast, EpochTailCanLeaveRanksWithoutSamples) {
  MpiCommunicator comm;
  TrainOptions opts;
  opts.write_outputs = false;
  opts.quiet = true;
  Trainer trainer(
      parse_config(kPlanConfig, "test",
                   {"dataset.train_size=100", "batch.init=[1,2,3,90]", "batch.min=1", "batch.max=128",
                    "policy.name=static", "policy.window=50", "hetero.slowdown=[1.0]"}),
      comm, opts);
  trainer.setup();
  trainer.prepare();
  trainer.step();  // 96 of 100; the next step (the tail of 4) is prefetched
  trainer.step();
  EXPECT_EQ(trainer.last_assignment().counts, (std::vector<int32_t>{0, 0, 0, 4}));
  trainer.step();  // a new epoch, the full plan again
  EXPECT_EQ(trainer.last_assignment().epoch, 1);
  EXPECT_EQ(trainer.last_assignment().counts, (std::vector<int32_t>{1, 2, 3, 90}));
  for (const auto& p : trainer.model().parameters()) EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
}

}  // namespace
}  // namespace dynamix
