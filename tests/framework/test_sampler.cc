// DYNAMIX — variable-batch sampler: every sample once per epoch whatever the plan does.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <set>

#include "framework/core/error.h"
#include "framework/train/sampler.h"

namespace dynamix {
namespace {

TEST(Sampler, PlanChangingEveryFewStepsCoversEachIndexOnceWithoutOverlap) {
  const int64_t n = 1000;
  const int world = 4;
  VariableBatchSampler sampler(n, 7);
  std::mt19937 rng(3);
  std::vector<int32_t> plan = {5, 17, 32, 64};
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int> seen(n, 0);
    int steps = 0;
    do {
      if (steps % 3 == 0) {  // a new plan every 3 steps, zeros allowed for some ranks
        for (auto& b : plan) b = static_cast<int32_t>(rng() % 40);
        if (std::accumulate(plan.begin(), plan.end(), 0) == 0) plan[0] = 1;
      }
      const StepAssignment step = sampler.next(plan);
      EXPECT_EQ(step.epoch, epoch);
      std::set<int64_t> this_step;
      for (int r = 0; r < world; ++r) {
        const auto idx = sampler.indices(step, r);
        EXPECT_EQ(static_cast<int32_t>(idx.size()), step.counts[r]);
        EXPECT_LE(step.counts[r], plan[r]);
        for (int64_t i : idx) {
          ASSERT_GE(i, 0);
          ASSERT_LT(i, n);
          EXPECT_TRUE(this_step.insert(i).second) << "index " << i << " on two ranks in one step";
          ++seen[i];
        }
      }
      ++steps;
    } while (sampler.cursor() < n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << "index " << i << " in epoch " << epoch;
  }
}

TEST(Sampler, TailIsSplitInProportionToThePlan) {
  VariableBatchSampler sampler(10, 1);
  sampler.next({3, 3});  // 6 of 10
  const auto tail = sampler.next({3, 9});
  EXPECT_EQ(tail.total(), 4);
  EXPECT_EQ(tail.counts, (std::vector<int32_t>{1, 3}));
  const auto next = sampler.next({3, 3});
  EXPECT_EQ(next.epoch, 1);
  EXPECT_EQ(next.start, 0);
}

TEST(Sampler, PermutationDependsOnSeedAndEpochOnly) {
  VariableBatchSampler a(100, 5), b(100, 5), c(100, 6);
  const auto sa = a.next({100});
  const auto sb = b.next({100});
  const auto sc = c.next({100});
  EXPECT_EQ(a.indices(sa, 0), b.indices(sb, 0));
  EXPECT_NE(a.indices(sa, 0), c.indices(sc, 0));
  const auto e1 = a.next({100});
  EXPECT_NE(a.indices(e1, 0), b.indices(sb, 0));  // new epoch, new order
}

TEST(Sampler, RestoredPositionContinuesTheSameSequence) {
  VariableBatchSampler a(50, 9), b(50, 9);
  for (int i = 0; i < 4; ++i) a.next({4, 3});
  b.set_position(a.epoch(), a.cursor());
  const auto sa = a.next({4, 3});
  const auto sb = b.next({4, 3});
  EXPECT_EQ(a.indices(sa, 1), b.indices(sb, 1));
  EXPECT_THROW(b.set_position(0, 51), Error);
}

TEST(Sampler, ResumedWithAnotherWorldSizeFinishesTheEpochWithoutRepeatsOrGaps) {
  // 4 ranks run part of an epoch and checkpoint (epoch, cursor); 3 ranks, and then 5, resume
  // from it in fresh samplers: together they use every index exactly once.
  const int64_t n = 1003;
  for (const int resumed_world : {3, 5}) {
    std::vector<int> seen(n, 0);
    VariableBatchSampler before(n, 11);
    for (int s = 0; s < 5; ++s) {
      const StepAssignment step = before.next({16, 16, 32, 8});
      for (int r = 0; r < 4; ++r) {
        for (int64_t i : before.indices(step, r)) ++seen[i];
      }
    }
    VariableBatchSampler after(n, 11);
    after.set_position(before.epoch(), before.cursor());
    const std::vector<int32_t> plan(static_cast<size_t>(resumed_world), 24);
    while (after.epoch() == 0 && after.cursor() < n) {
      const StepAssignment step = after.next(plan);
      ASSERT_EQ(step.epoch, 0);
      for (int r = 0; r < resumed_world; ++r) {
        for (int64_t i : after.indices(step, r)) ++seen[i];
      }
    }
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(seen[i], 1) << "index " << i << ", resumed on " << resumed_world;
  }
}

TEST(Sampler, RejectsEmptyPlans) {
  VariableBatchSampler s(10, 1);
  EXPECT_THROW(s.next({0, 0}), Error);
  EXPECT_THROW(s.next({}), Error);
  EXPECT_THROW(s.next({-1, 4}), Error);
}

TEST(ProportionalSplit, SumsExactlyAndFollowsWeights) {
  EXPECT_EQ(proportional_split(10, {1, 1}), (std::vector<int32_t>{5, 5}));
  EXPECT_EQ(proportional_split(7, {5, 17, 32, 64}), (std::vector<int32_t>{0, 1, 2, 4}));
  const auto s = proportional_split(118, {5, 17, 32, 64});
  EXPECT_EQ(std::accumulate(s.begin(), s.end(), 0), 118);
}

}  // namespace
}  // namespace dynamix
