// DYNAMIX — StartCheck: under the starting plan, ranks whose mean compute times clearly differ by
// 25 % ask for the first decision at once; noise, the start-up steps' costs and units do not.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "agent/start_check.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

// Steps of ranks with mean compute `means` and lognormal noise `sigma`, scaled by `unit`; the
// first kStartupSteps steps are `first_factor` times slower (start-up). Returns the 1-based step that asked
// (0: none within `steps`).
int first_ask(StartCheck& check, const std::vector<double>& means, double sigma, int steps, uint64_t seed,
              double unit = 1, double first_factor = 1) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, 1);
  for (int s = 0; s < steps; ++s) {
    std::vector<double> t(means.size());
    for (size_t i = 0; i < t.size(); ++i) {
      t[i] = unit * means[i] * std::exp(sigma * normal(rng)) * (s < kStartupSteps ? first_factor : 1);
    }
    if (check.observe(t)) return s + 1;
  }
  return 0;
}

TEST(StartCheck, ClearHeterogeneityAsksWithinAFewSteps) {
  // The README demo's shape: slowdowns 1, 1, 1.5, 2.5 under 32 each, 20 % step noise.
  StartCheck check;
  const int at = first_ask(check, {0.02, 0.02, 0.03, 0.05}, 0.2, 20, 1);
  EXPECT_GE(at, kStartupSteps + 3);  // the start-up steps are set aside, then 3 steps at least
  EXPECT_LE(at, 8);
  EXPECT_FALSE(check.armed());
  EXPECT_EQ(first_ask(check, {0.02, 0.05}, 0.0, 20, 1), 0);  // once per arming
  check.arm();
  EXPECT_EQ(first_ask(check, {0.02, 0.05}, 0.0, 20, 1), kStartupSteps + 3);
}

TEST(StartCheck, NoiseAloneNeverAsks) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    StartCheck small, large;
    EXPECT_EQ(first_ask(small, std::vector<double>(4, 0.03), 0.3, 40, seed), 0) << "seed " << seed;
    EXPECT_EQ(first_ask(large, std::vector<double>(256, 0.03), 0.3, 40, seed), 0) << "seed " << seed;
  }
  StartCheck mild;  // a real but small spread (10 %) is not worth a decision before the window ends
  EXPECT_EQ(first_ask(mild, {0.03, 0.03, 0.03, 0.033}, 0.02, 40, 1), 0);
}

TEST(StartCheck, TheStartUpStepsAndUnitsDoNotMatter) {
  StartCheck plain, spiked, scaled;
  const std::vector<double> means = {0.02, 0.02, 0.03, 0.05};
  const int at = first_ask(plain, means, 0.1, 20, 7);
  ASSERT_GT(at, 0);
  EXPECT_EQ(first_ask(spiked, means, 0.1, 20, 7, 1, 50.0), at);  // 50x start-up steps are set aside
  EXPECT_EQ(first_ask(scaled, means, 0.1, 20, 7, 1000.0), at);
}

TEST(StartCheck, BadInput) {
  StartCheck check;
  EXPECT_FALSE(check.observe({0.01}));  // one rank has nothing to balance
  EXPECT_FALSE(check.observe({0.01, std::nan("")}));
  StartCheck::Options o;
  o.spread = 1.0;
  EXPECT_THROW(StartCheck{o}, Error);
  o = {};
  o.min_steps = 1;
  EXPECT_THROW(StartCheck{o}, Error);
}

}  // namespace
}  // namespace dynamix
