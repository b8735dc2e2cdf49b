// DYNAMIX — recurring interference: the rank models log each restart, and the hedge holds the slow
// phase's plan only once a slowdown has come back, only while the pattern holds, and only where
// following each phase would cost more (short phases, few slow ranks) than holding.
#include <gtest/gtest.h>

#include <vector>

#include "agent/recurring_slowdown.h"
#include "tests/agent/model_window.h"

namespace dynamix {
namespace {

constexpr double kLatency = 4;  // steps from a change to the plan that answers it

struct Cluster {
  RankTimeModels models{[] {
    RankTimeModels::Options o;
    o.restart_at_recent = true;
    return o;
  }()};
  std::vector<int32_t> plan;
  int64_t step = 0;

  explicit Cluster(size_t n) : plan(n, 32) {}
  // `windows` windows of 10 steps with rank i `slow[i]` times slower.
  void run(int windows, const std::vector<double>& slow) {
    for (int w = 0; w < windows; ++w) {
      step += 10;
      models.observe(model_window(step, plan, slow));
    }
  }
  RecurringHedge hedge() const {
    const ClusterState s = model_window(step, plan, std::vector<double>(plan.size(), 1.0));
    std::vector<double> lo, hi;
    rank_bounds(s.bounds, plan.size(), lo, hi);
    double B = 0;
    for (int32_t b : plan) B += b;
    return hedge_recurring(s, models, B, lo, hi, kLatency);
  }
};

std::vector<double> slowed(size_t n, const std::vector<size_t>& ranks, double factor) {
  std::vector<double> s(n, 1.0);
  for (size_t r : ranks) s[r] = factor;
  return s;
}

TEST(RankTimeModels, LogsEachRestartWithItsDirectionAndTheModelItReplaced) {
  Cluster c(4);
  c.run(3, slowed(4, {}, 3));
  c.run(2, slowed(4, {1}, 3));
  c.run(2, slowed(4, {}, 3));
  const auto& log = c.models.restarts(1);
  ASSERT_EQ(log.size(), 2u);
  EXPECT_TRUE(log[0].slower);
  EXPECT_EQ(log[0].step, 40);
  EXPECT_FALSE(log[1].slower);
  EXPECT_EQ(log[1].step, 60);
  EXPECT_NEAR(log[1].before.at(32), 3 * (0.004 + 0.0004 * 32), 1e-9);  // the slow phase's model
  EXPECT_TRUE(c.models.restarts(0).empty());
}

// 2 of 16 ranks 3x slower for 2 of every 4 windows: holding their slow-phase share through the
// fast phases beats moving batch back and forth; but only from the third recovery on (a slowdown
// that came twice may not come again) and not once the slowdown stops coming back.
TEST(RecurringHedge, ShortPhasesOfFewSlowRanksHoldTheSlowPhasePlan) {
  Cluster c(16);
  const auto slow = slowed(16, {2, 9}, 3), fast = slowed(16, {}, 3);
  c.run(3, fast);
  for (int spell = 0; spell < 2; ++spell) {
    c.run(2, slow);
    c.run(2, fast);
    EXPECT_FALSE(c.hedge().recurring) << "after slow spell " << spell + 1;
  }
  c.run(2, slow);
  EXPECT_FALSE(c.hedge().recurring);  // in a slow phase
  c.run(1, fast);
  const RecurringHedge h = c.hedge();
  ASSERT_TRUE(h.recurring);
  EXPECT_TRUE(h.hold);
  EXPECT_LT(h.hold_cost, h.follow_cost);
  ASSERT_EQ(h.plan.size(), 16u);
  // Balanced for the slow phase: the slow ranks carry about a third of the others' share.
  EXPECT_LT(h.plan[2], 0.45 * h.plan[0]);
  EXPECT_NEAR(h.plan[2], h.plan[9], 1e-9);
  double total = 0;
  for (double b : h.plan) total += b;
  EXPECT_NEAR(total, 512, 1e-6);
  c.run(4, fast);  // 40 steps of fast phase, where the last one lasted 20: the pattern ended
  EXPECT_FALSE(c.hedge().recurring);
}

// Half the ranks 3x slower for 20 of every 40 windows: holding their slow-phase share would
// overload the other half for 200 steps a cycle against a few steps of the wrong plan at each
// switch: follow.
TEST(RecurringHedge, LongPhasesOfManySlowRanksAreFollowed) {
  Cluster c(8);
  const auto slow = slowed(8, {0, 1, 2, 3}, 3), fast = slowed(8, {}, 3);
  c.run(3, fast);
  for (int cycle = 0; cycle < 3; ++cycle) {
    c.run(20, slow);
    c.run(20, fast);
  }
  const RecurringHedge h = c.hedge();
  ASSERT_TRUE(h.recurring);
  EXPECT_FALSE(h.hold);
  EXPECT_GT(h.hold_cost, h.follow_cost);
}

// A slowdown that moves from rank to rank (a wave) has some rank in its slow phase at every
// decision: no single held plan serves it.
TEST(RecurringHedge, AWavePassingOverTheRanksIsFollowed) {
  Cluster c(4);
  c.run(3, slowed(4, {}, 3));
  for (int pass = 0; pass < 3; ++pass) {
    for (size_t r = 0; r < 4; ++r) c.run(2, slowed(4, {r}, 3));
  }
  EXPECT_FALSE(c.hedge().recurring);
}

}  // namespace
}  // namespace dynamix
