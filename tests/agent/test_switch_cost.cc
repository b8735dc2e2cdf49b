// DYNAMIX — SwitchCost: the excess time of the first steps after a plan change, against windows
// that kept their plan; noise alone, stalled steps and units do not make a cost.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "agent/switch_cost.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

// `windows` windows of `steps` steps on 4 ranks with lognormal noise `sigma`, every other one after
// a changed plan; a changed window's first step is `first` and its second `second` times slower
// (`unit` scales every time). Returns the cost after the last window is scored.
double run(double first, double second, double sigma, int windows, uint64_t seed, double unit = 1,
           int steps = 20) {
  SwitchCost cost;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  std::vector<double> t(4);
  for (int w = 0; w < windows; ++w) {
    const bool changed = w % 2 == 0;
    cost.decided(changed);
    for (int s = 0; s < steps; ++s) {
      const double extra = !changed ? 1 : s == 0 ? first : s == 1 ? second : 1;
      for (size_t i = 0; i < t.size(); ++i)
        t[i] = unit * 0.03 * (1 + 0.5 * i) * extra * std::exp(sigma * normal(rng));
      cost.observe(t);
    }
  }
  cost.decided(false);
  return cost.cost();
}

TEST(SwitchCost, MeasuresTheExcessOfTheFirstSteps) {
  // 1.4x and 1.2x: 0.6 of a step per change, less one standard error.
  const double c = run(1.4, 1.2, 0.1, 40, 1);
  EXPECT_GT(c, 0.45);
  EXPECT_LT(c, 0.65);
}

TEST(SwitchCost, NoCostWithoutOneAndUntilEnoughChanges) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    EXPECT_LT(run(1, 1, 0.2, 40, seed), 0.15) << "seed " << seed;
  }
  EXPECT_EQ(run(2, 2, 0.0, 4, 1), 0.0);  // two changed windows: not enough to say
  EXPECT_GT(run(2, 2, 0.0, 6, 1), 1.5);  // three
}

TEST(SwitchCost, UnitsAndStalledStepsDoNotMatter) {
  EXPECT_NEAR(run(1.4, 1.2, 0.1, 40, 3, 1000.0), run(1.4, 1.2, 0.1, 40, 3), 1e-9);
  // A first step stalled 50x counts as at most `clamp` steps: the cost stays below 2 + 1.
  EXPECT_LT(run(50, 1, 0.0, 40, 1), 3.0);
  EXPECT_GT(run(50, 1, 0.0, 40, 1), 1.5);
}

TEST(SwitchCost, ShortWindowsAndBadStepsAreNotScored) {
  EXPECT_EQ(run(2, 2, 0.0, 40, 1, 1, 6), 0.0);  // 3 steps + 3 later ones: under min_later
  SwitchCost cost;
  for (int w = 0; w < 10; ++w) {
    cost.decided(true);
    for (int s = 0; s < 20; ++s) cost.observe({0.01 * (s == 0 ? 3 : 1), std::nan("")});
  }
  cost.decided(false);
  EXPECT_EQ(cost.changes_seen(), 0);
  EXPECT_EQ(cost.cost(), 0.0);
  for (int w = 0; w < 10; ++w) {  // one bad step in a window: the later ones are not its first
    cost.decided(true);
    for (int s = 0; s < 20; ++s) cost.observe({0.01 * (s == 1 ? 3 : 1), s == 0 ? -1.0 : 0.01});
  }
  cost.decided(false);
  EXPECT_EQ(cost.changes_seen(), 0);
  cost.reset();
  EXPECT_EQ(cost.changes_seen(), 0);
}

TEST(SwitchCost, RejectsBadOptions) {
  SwitchCost::Options o;
  o.steps = 0;
  EXPECT_THROW(SwitchCost{o}, Error);
}

}  // namespace
}  // namespace dynamix
