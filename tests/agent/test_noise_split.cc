// DYNAMIX — the noise-aware split: E[max] of independent normals against closed forms and Monte
// Carlo; ranks whose steps scatter more carry less, and only where the noise really differs; the
// rank models' step noise reads the median window, leaving out restarts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "agent/noise_split.h"

namespace dynamix {
namespace {

TEST(ExpectedMaxNormal, MatchesClosedFormsAndMonteCarlo) {
  EXPECT_NEAR(expected_max_normal({0, 0}, {1, 1}), 1 / std::sqrt(M_PI), 1e-4);  // E max of two N(0,1)
  EXPECT_NEAR(expected_max_normal({3}, {0.5}), 3, 1e-6);
  EXPECT_DOUBLE_EQ(expected_max_normal({1, 2, 1.5}, {0, 0, 0}), 2);
  // Ranks far below the slowest do not count.
  EXPECT_NEAR(expected_max_normal({10, 1, 1, 1}, {0.1, 0.1, 0.1, 0.1}), 10, 1e-6);
  const std::vector<double> mean = {1.0, 1.1, 0.9, 1.0, 0.95}, sd = {0.1, 0.05, 0.3, 0.2, 0.0};
  std::mt19937_64 rng(3);
  std::normal_distribution<double> z(0, 1);
  double sum = 0;
  const int samples = 400000;
  for (int k = 0; k < samples; ++k) {
    double m = -HUGE_VAL;
    for (size_t i = 0; i < mean.size(); ++i) m = std::max(m, mean[i] + sd[i] * z(rng));
    sum += m;
  }
  EXPECT_NEAR(expected_max_normal(mean, sd), sum / samples, 1e-3);
}

// A plan is judged by its slowest mean where no noise was weighed, and by the expected slowest
// step under the ranks' relative noise where it was: the noisy rank, not the slowest mean, sets it.
TEST(JudgedStepTime, TheSlowestMeanOrTheExpectedSlowestUnderTheWeighedNoise) {
  EXPECT_DOUBLE_EQ(judged_step_time({1.0, 1.2, 0.9}, {}), 1.2);
  EXPECT_DOUBLE_EQ(judged_step_time({}, {}), 0);
  const std::vector<double> mean = {1.0, 1.1}, noise = {0.4, 0.02};
  EXPECT_DOUBLE_EQ(judged_step_time(mean, noise), expected_max_normal(mean, {0.4, 0.022}));
  EXPECT_GT(judged_step_time(mean, noise), 1.15);
  // A noise vector for other ranks is not this plan's: the slowest mean.
  EXPECT_DOUBLE_EQ(judged_step_time(mean, {0.4}), 1.1);
}

// Windows of one cluster: equal speeds, per-rank relative step noise `noise[i]` over `steps` steps.
ClusterState window(const std::vector<double>& noise, int32_t batch = 32, int32_t steps = 20) {
  ClusterState s;
  s.bounds.min = 1;
  s.bounds.max = {1024};
  for (size_t i = 0; i < noise.size(); ++i) {
    NodeRecord r;
    r.rank = int32_t(i);
    r.batch_size = batch;
    r.steps = steps;
    r.compute_s = r.compute_recent_s = 0.004 * batch;
    r.compute_rel_se = noise[i] / std::sqrt(double(steps));
    s.nodes.push_back(r);
  }
  return s;
}

std::vector<double> factors_after(const std::vector<double>& noise, int windows, double B) {
  RankTimeModels models;
  for (int w = 0; w < windows; ++w) models.observe(window(noise));
  std::vector<double> lo, hi;
  rank_bounds(window(noise).bounds, noise.size(), lo, hi);
  return noise_split_scale(models, B, lo, hi, nullptr);
}

TEST(NoiseSplit, ANoisierRankCarriesLessAndTheExpectedStepShrinks) {
  const std::vector<double> noise = {0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.3};
  RankTimeModels models;
  for (int w = 0; w < 6; ++w) models.observe(window(noise));
  EXPECT_NEAR(models.readings()[7].step_noise, 0.3, 1e-9);
  std::vector<double> lo, hi, balanced, noisy;
  rank_bounds(window(noise).bounds, noise.size(), lo, hi);
  const std::vector<double> f = noise_split_scale(models, 256, lo, hi, nullptr);
  models.split(256, lo, hi, balanced);
  models.split(256, lo, hi, noisy, &f);
  EXPECT_NEAR(balanced[7], 32, 1e-6);
  EXPECT_LT(noisy[7], 28);  // the optimum of E[max] here is about 25 (Monte Carlo)
  EXPECT_GT(noisy[0], 32);
  EXPECT_NEAR(std::accumulate(noisy.begin(), noisy.end(), 0.0), 256, 1e-6);
  auto expected_step = [&](const std::vector<double>& b) {
    std::vector<double> mean(b.size()), sd(b.size());
    for (size_t i = 0; i < b.size(); ++i) mean[i] = models.models()[i].at(b[i]), sd[i] = noise[i] * mean[i];
    return expected_max_normal(mean, sd);
  };
  EXPECT_LT(expected_step(noisy), 0.97 * expected_step(balanced));
}

TEST(NoiseSplit, KeepsTheBalancedSplitUnlessNoiseReallyDiffers) {
  auto all_ones = [](const std::vector<double>& f) {
    return std::all_of(f.begin(), f.end(), [](double x) { return x == 1.0; });
  };
  EXPECT_TRUE(all_ones(factors_after(std::vector<double>(8, 0.2), 6, 256)));  // the same noise
  EXPECT_TRUE(all_ones(factors_after({0.1, 0.1, 0.1, 0.13}, 6, 128)));        // under min_ratio
  EXPECT_TRUE(all_ones(factors_after({0.05, 0.05, 0.05, 0.3}, 3, 128)));      // too few windows
  EXPECT_FALSE(all_ones(factors_after({0.05, 0.05, 0.05, 0.3}, 4, 128)));
  EXPECT_TRUE(all_ones(factors_after({0.0, 0.0, 0.0, 0.0}, 6, 128)));  // no noise measured
}

// A window with a change inside that stayed under the restart threshold scatters its steps by the
// change: the median window keeps it out of the rank's noise. A restart window is left out too.
TEST(RankModels, StepNoiseReadsTheMedianWindowWithoutRestarts) {
  RankTimeModels models;
  for (int w = 0; w < 5; ++w) models.observe(window({0.1, 0.1}));
  models.observe(window({0.1, 0.6}));
  EXPECT_NEAR(models.readings()[1].step_noise, 0.1, 1e-9);
  ClusterState slowed = window({0.1, 0.9});
  slowed.nodes[1].compute_s *= 3;  // a restart: the history starts over from this window
  models.observe(slowed);
  EXPECT_TRUE(models.readings()[1].restarted);
  EXPECT_EQ(models.readings()[1].step_noise, 0);
  models.observe(window({0.1, 0.2}));
  EXPECT_NEAR(models.readings()[1].step_noise, 0.2, 1e-9);
}

}  // namespace
}  // namespace dynamix
