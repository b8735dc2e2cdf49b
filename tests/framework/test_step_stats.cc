// DYNAMIX — per-step exchange: straggler wait and transfer time derived from every rank's times.
#include <gtest/gtest.h>

#include "framework/core/stats.h"
#include "framework/train/step_stats.h"

namespace dynamix {
namespace {

TEST(StepExchange, WaitIsTheSlowestReadyTimeMinusOwn) {
  LocalStep a{0.01, 0.10, 0.35, 0.0, 2.0, 4.0, 1.0, 0.0, 1.0};  // ready at 0.11, waited in allreduce
  LocalStep b{0.02, 0.40, 0.06, 0.0, 6.0, 12.0, 2.0, 1.0};      // the straggler, ready at 0.42
  auto buf = StepExchange::pack(a, 0, 2);
  const auto other = StepExchange::pack(b, 1, 2);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] += other[i];  // what SUM allreduce does
  const auto ex = StepExchange::unpack(buf, 2);
  EXPECT_NEAR(ex.wait_s[0], 0.31, 1e-12);
  EXPECT_NEAR(ex.wait_s[1], 0.0, 1e-12);
  EXPECT_NEAR(ex.comm_s[0], 0.04, 1e-12);
  EXPECT_NEAR(ex.comm_s[1], 0.06, 1e-12);
  EXPECT_NEAR(ex.loss, 8.0 / 16.0, 1e-12);
  EXPECT_TRUE(ex.stop);
  EXPECT_TRUE(ex.output_failed);  // rank 0's failed write reaches every rank
  EXPECT_FALSE(ex.ranks[1].output_failed > 0);

  WindowAccumulator acc;
  acc.add(ex, 0, 4);
  acc.add(ex, 0, 4);
  const NodeRecord r = acc.take(0, 64);
  EXPECT_EQ(r.steps, 2);
  EXPECT_EQ(r.batch_size, 4);
  EXPECT_EQ(r.batch_max, 64);
  EXPECT_NEAR(r.wait_s, 0.31, 1e-12);
  EXPECT_NEAR(r.samples_per_s, 8.0 / 0.2, 1e-9);
  EXPECT_EQ(r.compute_rel_se, 0);  // two equal steps: no spread
  EXPECT_EQ(acc.steps(), 0);
}

// Compute times 0.1 and 0.3: mean 0.2, sd 0.1414, standard error sd/sqrt(2) = 0.1, relative 0.5.
TEST(StepExchange, WindowRecordsTheRelativeStandardErrorOfCompute) {
  WindowAccumulator acc;
  for (double c : {0.1, 0.3}) {
    LocalStep l{0.0, c, 0.0, 0.0, 1.0, 1.0, 1.0};
    acc.add(StepExchange::unpack(StepExchange::pack(l, 0, 1), 1), 0, 8);
  }
  EXPECT_NEAR(acc.take(0, 64).compute_rel_se, 0.5, 1e-12);
  EXPECT_EQ(relative_standard_error(0.1, 0.01, 1), 0);  // one value: unknown
}

// Eight steps, the last two three times slower: the window's mean mixes both (1.5), its last
// quarter (recent_steps(8) = 2 steps) is the slower regime alone.
TEST(StepExchange, WindowRecordsTheMeanOfItsLastQuarter) {
  WindowAccumulator acc;
  for (double c : {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 3.0, 3.0}) {
    LocalStep l{0.0, c, 0.0, 0.0, 1.0, 1.0, 1.0};
    acc.add(StepExchange::unpack(StepExchange::pack(l, 0, 1), 1), 0, 8);
  }
  const NodeRecord r = acc.take(0, 64);
  EXPECT_NEAR(r.compute_s, 1.5, 1e-12);
  EXPECT_NEAR(r.compute_recent_s, 3.0, 1e-12);
  EXPECT_EQ(recent_steps(3), 1);  // short windows: at least the last step
}

// The first kStartupSteps (2) steps of a process (one-time costs) stay out of their window's
// record, but for the window's last step; later windows are whole.
TEST(StepExchange, TheStartUpStepsOfAProcessAreSetAside) {
  ASSERT_EQ(kStartupSteps, 2);
  auto step = [](double c) {
    LocalStep l{0.0, c, 0.0, 0.0, 1.0, 1.0, 1.0};
    return StepExchange::unpack(StepExchange::pack(l, 0, 1), 1);
  };
  WindowAccumulator acc;
  acc.set_aside_startup();
  for (double c : {2.5, 0.9, 0.1, 0.3}) acc.add(step(c), 0, 8);
  NodeRecord r = acc.take(0, 64);
  EXPECT_EQ(r.steps, 2);
  EXPECT_NEAR(r.compute_s, 0.2, 1e-12);
  EXPECT_NEAR(r.compute_rel_se, 0.5, 1e-12);
  for (double c : {2.5, 0.1}) acc.add(step(c), 0, 8);
  r = acc.take(0, 64);
  EXPECT_EQ(r.steps, 2);  // later windows keep every step
  EXPECT_NEAR(r.compute_s, 1.3, 1e-12);

  acc.set_aside_startup();
  for (double c : {2.5, 0.9}) acc.add(step(c), 0, 8);
  r = acc.take(0, 64);
  EXPECT_EQ(r.steps, 1);  // a window of start-up steps only keeps its last
  EXPECT_NEAR(r.compute_s, 0.9, 1e-12);

  acc.set_aside_startup();  // a window that ends after the first step: the second is set aside next
  acc.add(step(2.5), 0, 8);
  EXPECT_NEAR(acc.take(0, 64).compute_s, 2.5, 1e-12);
  for (double c : {0.9, 0.1}) acc.add(step(c), 0, 8);
  EXPECT_NEAR(acc.take(0, 64).compute_s, 0.1, 1e-12);

  acc.set_aside_startup();  // asked for before a take with no step: still applies to the next steps
  acc.take(0, 64);
  for (double c : {2.5, 0.9, 0.1}) acc.add(step(c), 0, 8);
  EXPECT_NEAR(acc.take(0, 64).compute_s, 0.1, 1e-12);
}

}  // namespace
}  // namespace dynamix
