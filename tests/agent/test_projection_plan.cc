// DYNAMIX — project_plan: bounds, change limits, exact global batch, adversarial inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "agent/plan_projection.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

int64_t sum(const std::vector<int32_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

// Bounds of B = `global` with b_i in [1, 100] and no change limit.
BatchBounds fixed_b(int32_t global) {
  BatchBounds b;
  b.min = 1;
  b.max = {100};
  b.max_change = 0;
  b.global_batch = global;
  return b;
}

TEST(ProjectionTest, RoundingKeepsTheLargestRelativeExcessSmallest) {
  BatchBounds b = fixed_b(4);
  // Continuous fit is the desired plan itself; the unit left goes to the first of the tied 1.5's.
  EXPECT_EQ(project_plan({1.5, 1.5, 1.0}, {1, 1, 1}, b).batch_sizes, (std::vector<int32_t>{2, 1, 1}));
  b.global_batch = 128;
  // 64:64:32:16 scaled to 128 = 46.55, 46.55, 23.27, 11.64 -> floors 126; 47/46.55 = 1.010 is the
  // smallest excess (24/23.27 = 12/11.64 = 1.031), so both units go to the large ranks.
  EXPECT_EQ(project_plan({64, 64, 32, 16}, {32, 32, 32, 32}, b).batch_sizes,
            (std::vector<int32_t>{47, 47, 23, 11}));
  // The suite's ten-second-step cluster (4 fast ranks, 4 at 0.3x): the balanced 53.5 / 10.5 with
  // B = 256. Largest remainders would give the slow ranks 11 (4.8 % over their share, so every step
  // waits for them); 54 is only 0.9 % over 53.5.
  b.global_batch = 256;
  EXPECT_EQ(project_plan({53.5, 53.5, 53.5, 53.5, 10.5, 10.5, 10.5, 10.5}, std::vector<int32_t>(8, 32), b)
                .batch_sizes,
            (std::vector<int32_t>{54, 54, 54, 54, 10, 10, 10, 10}));
  // A rank at its upper bound takes no unit: unbounded, 2.5, 2.5, 2 round to 3, 2, 2; with rank 0
  // capped at 2 the fit is 2, 2.78, 2.22 and the unit goes to rank 1 (3/2.78 < 3/2.22).
  b.max = {100};
  b.global_batch = 7;
  EXPECT_EQ(project_plan({2.5, 2.5, 2}, {2, 2, 2}, b).batch_sizes, (std::vector<int32_t>{3, 2, 2}));
  b.max = {2, 100, 100};
  EXPECT_EQ(project_plan({2.5, 2.5, 2}, {2, 2, 2}, b).batch_sizes, (std::vector<int32_t>{2, 3, 2}));
}

TEST(ProjectionTest, RespectsChangeLimitAndAlwaysAllowsOneStep) {
  BatchBounds b;
  b.max = {1000};
  b.fixed_global = false;
  b.max_change = 0.5;
  EXPECT_EQ(project_plan({1000, 1, 50}, {40, 40, 40}, b).batch_sizes, (std::vector<int32_t>{60, 20, 50}));
  // b = 1 with a 50% limit could never move by rounding; a step of one is allowed.
  EXPECT_EQ(project_plan({10}, {1}, b).batch_sizes, (std::vector<int32_t>{2}));
}

// A centre moves a rank's band (|b - c| <= max_change · c); a non-finite one lifts it.
TEST(ProjectionTest, ACentreMovesTheChangeBandAndNaNLiftsIt) {
  BatchBounds b;
  b.max = {1000};
  b.fixed_global = false;
  b.max_change = 0.5;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> centre{80, nan, 40};
  EXPECT_EQ(project_plan({1000, 1000, 1000}, {40, 40, 40}, b, &centre).batch_sizes,
            (std::vector<int32_t>{120, 1000, 60}));
  // The band around 80 is [40, 120], widened as always by a step of one from the current 40.
  EXPECT_EQ(project_plan({1, 1, 1}, {40, 40, 40}, b, &centre).batch_sizes, (std::vector<int32_t>{39, 1, 20}));
  const std::vector<double> short_centre{80};
  EXPECT_THROW(project_plan({1, 1, 1}, {40, 40, 40}, b, &short_centre), Error);
}

TEST(ProjectionTest, NonFiniteKeepsCurrentNegativeGoesLow) {
  BatchBounds b;
  b.min = 2;
  b.max = {64};
  b.fixed_global = false;
  b.max_change = 0;
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(project_plan({nan, inf, -inf, -5, 0, 1e300}, {7, 8, 9, 10, 11, 12}, b).batch_sizes,
            (std::vector<int32_t>{7, 8, 9, 2, 2, 64}));
}

TEST(ProjectionTest, InfeasibleGlobalBatchIsClosestAndNoted) {
  BatchBounds b;
  b.min = 4;
  b.max = {8, 16};
  b.max_change = 0;
  b.global_batch = 100;
  BatchPlan p = project_plan({1, 1}, {4, 4}, b);
  EXPECT_EQ(p.batch_sizes, (std::vector<int32_t>{8, 16}));
  EXPECT_NE(p.note.find("infeasible"), std::string::npos) << p.note;
  b.global_batch = 3;
  p = project_plan({50, 50}, {8, 8}, b);
  EXPECT_EQ(p.batch_sizes, (std::vector<int32_t>{4, 4}));
  EXPECT_NE(p.note.find("infeasible"), std::string::npos);
}

TEST(ProjectionTest, RelaxesChangeLimitOnlyToKeepGlobalBatch) {
  BatchBounds b;
  b.max = {1000};
  b.max_change = 0.1;
  b.global_batch = 200;  // current sum 100: +10% per rank cannot reach it
  const BatchPlan p = project_plan({50, 50}, {50, 50}, b);
  EXPECT_EQ(sum(p.batch_sizes), 200);
  EXPECT_NE(p.note.find("max_change relaxed"), std::string::npos);
}

// batch.multiple: the same projection in units of k samples. 64:64:32:16 at B = 128 and k = 8 is
// 5.82, 5.82, 2.91, 1.45 units: floors 5, 5, 2, 1 (13 of 16), and the three units left go where
// they raise a rank least relative to its share: 6/5.82 (both large ranks) and 3/2.91 before
// 2/1.45. Bounds round inward (min 5 -> 8, max 44 -> 40), a step of one unit is always allowed,
// and a B that is not a multiple is rounded to the nearest one, with a note.
TEST(ProjectionTest, AMultipleProjectsInItsUnits) {
  BatchBounds b = fixed_b(128);
  b.multiple = 8;
  EXPECT_EQ(project_plan({64, 64, 32, 16}, {32, 32, 32, 32}, b).batch_sizes,
            (std::vector<int32_t>{48, 48, 24, 8}));
  b.min = 5;
  b.max = {44};
  EXPECT_EQ(project_plan({100, 10, 10, 8}, {32, 32, 32, 32}, b).batch_sizes,
            (std::vector<int32_t>{40, 32, 32, 24}));  // 40 is rank 0's most; the rest share 88
  b.max = {100};
  b.min = 1;
  b.max_change = 0.1;  // 10 % of 32 is under a unit: one unit of change is still allowed
  EXPECT_EQ(project_plan({64, 64, 0, 0}, {32, 32, 32, 32}, b).batch_sizes,
            (std::vector<int32_t>{40, 40, 24, 24}));
  b.max_change = 0;
  b.global_batch = 130;
  const BatchPlan odd = project_plan({1, 1, 1, 1}, {32, 32, 32, 32}, b);
  EXPECT_EQ(odd.batch_sizes, (std::vector<int32_t>{32, 32, 32, 32}));
  EXPECT_NE(odd.note.find("global batch 130 is not a multiple of batch.multiple 8: using 128"),
            std::string::npos)
      << odd.note;
  b.global_batch = 0;  // fixed, none given: the current plan's B, rounded with the same note
  const BatchPlan current_b = project_plan({1, 1, 1, 1}, {33, 33, 33, 31}, b);
  EXPECT_EQ(current_b.batch_sizes, (std::vector<int32_t>{32, 32, 32, 32}));
  EXPECT_NE(current_b.note.find("global batch 130 is not a multiple of batch.multiple 8: using 128"),
            std::string::npos)
      << current_b.note;
  // Adaptive B: each rank rounds to its nearest multiple within the bounds.
  b.fixed_global = false;
  EXPECT_EQ(project_plan({27, 29, 3, 60}, {32, 32, 32, 32}, b).batch_sizes,
            (std::vector<int32_t>{24, 32, 8, 64}));
}

TEST(ProjectionTest, PlanWithinNamesTheFirstRankOutAndItsLimit) {
  BatchBounds b;
  b.min = 4;
  b.max = {64, 40};
  std::string why;
  EXPECT_TRUE(plan_within({60, 40}, b, 2, &why));
  EXPECT_FALSE(plan_within({60, 41}, b, 2, &why));
  EXPECT_EQ(why, "b_1 = 41 outside [4, 40]");
  EXPECT_FALSE(plan_within({3, 40}, b, 2, &why));
  EXPECT_EQ(why, "b_0 = 3 outside [4, 64]");
  b.multiple = 8;
  EXPECT_FALSE(plan_within({60, 40}, b, 2, &why));
  EXPECT_EQ(why, "b_0 = 60 not a multiple of batch.multiple 8");
  EXPECT_FALSE(plan_within({56}, b, 2, &why));
  EXPECT_EQ(why, "plan has 1 entries for 2 ranks");
}

TEST(ProjectionTest, LengthMismatchIsAnError) {
  BatchBounds b;
  EXPECT_THROW(project_plan({1, 2}, {1}, b), Error);
  b.max = {4, 4, 4};
  EXPECT_THROW(project_plan({1, 2}, {1, 1}, b), Error);
}

// Property test: random clusters, bounds and adversarial desired plans.
TEST(ProjectionTest, RandomAndAdversarialPlansStayFeasible) {
  std::mt19937_64 rng(1234);
  auto uni = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (int trial = 0; trial < 4000; ++trial) {
    const size_t n = size_t(uni(1, trial % 10 == 0 ? 1024 : 40));
    BatchBounds b;
    b.min = int32_t(uni(-2, 8));
    const int32_t lo = std::max(1, b.min);
    b.max.resize(n);
    for (auto& m : b.max) m = int32_t(uni(lo, lo + uni(0, 600)));
    b.fixed_global = uni(0, 3) != 0;
    b.max_change = std::array<double, 5>{0, 0.1, 0.25, 0.5, 2.0}[size_t(uni(0, 4))];
    std::vector<int32_t> current(n);
    int64_t sum_l = 0, sum_h = 0;
    for (size_t i = 0; i < n; ++i) {
      current[i] = int32_t(uni(lo, b.max[i]));
      sum_l += lo;
      sum_h += b.max[i];
    }
    b.global_batch = int32_t(uni(std::max<int64_t>(0, sum_l - 50), sum_h + 50));
    std::vector<double> desired(n);
    const int kind = int(uni(0, 6));
    for (size_t i = 0; i < n; ++i) {
      switch (kind) {
        case 0:
          desired[i] = 0;
          break;
        case 1:
          desired[i] = 1e300;
          break;
        case 2:
          desired[i] = nan;
          break;
        case 3:
          desired[i] = uni(0, 1) ? inf : -inf;
          break;
        case 4:
          desired[i] = -double(uni(0, 1000));
          break;
        case 5:
          desired[i] = std::array<double, 6>{nan, inf, -1, 0, 1e30, 3.7}[size_t(uni(0, 5))];
          break;
        default:
          desired[i] = std::uniform_real_distribution<double>(0, 700)(rng);
          break;
      }
    }
    const BatchPlan p = project_plan(desired, current, b);
    ASSERT_EQ(p.batch_sizes.size(), n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_GE(p.batch_sizes[i], lo) << "trial " << trial << " rank " << i;
      ASSERT_LE(p.batch_sizes[i], b.max[i]) << "trial " << trial << " rank " << i;
    }
    const int64_t s = sum(p.batch_sizes);
    if (b.fixed_global) {
      if (b.global_batch >= sum_l && b.global_batch <= sum_h && b.global_batch > 0) {
        ASSERT_EQ(s, b.global_batch) << "trial " << trial;
      } else if (b.global_batch > sum_h) {
        ASSERT_EQ(s, sum_h);
        ASSERT_FALSE(p.note.empty());
      }
    }
    if (!b.fixed_global && b.max_change > 0) {
      for (size_t i = 0; i < n; ++i) {
        const double allowed = std::max(1.0, std::ceil(b.max_change * current[i]));
        ASSERT_LE(std::abs(p.batch_sizes[i] - current[i]), allowed) << "trial " << trial;
      }
    }
    if (!b.fixed_global && kind == 2) {
      ASSERT_EQ(p.batch_sizes, current);  // all NaN: keep
    }
  }
}

}  // namespace
}  // namespace dynamix
