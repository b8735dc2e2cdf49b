// DYNAMIX — NoiseScaleEstimator: exact recovery from unequal batches, smoothing, guards; efficiency.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "agent/noise_scale.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

TEST(NoiseScaleTest, RecoversExactTermsFromUnequalBatches) {
  const double G = 2.5, S = 400;  // |G|^2 and tr(Sigma): B_noise = 160
  const std::vector<int32_t> b = {8, 16, 24, 40, 3};
  std::vector<double> y;
  for (int32_t bi : b) y.push_back(G + S / bi);
  const double B = 91;
  NoiseScaleEstimator est;
  ASSERT_TRUE(est.add(b, y, B, G + S / B));
  EXPECT_NEAR(est.last_grad_sq(), G, 1e-9);
  EXPECT_NEAR(est.last_trace_sigma(), S, 1e-7);
  EXPECT_NEAR(est.grad_sq(), G, 1e-9);  // bias-corrected EMA: exact after one step
  EXPECT_NEAR(est.noise_scale(), 160, 1e-6);
  for (int k = 0; k < 5; ++k) ASSERT_TRUE(est.add(b, y, B, G + S / B));
  EXPECT_NEAR(est.noise_scale(), 160, 1e-6);
  EXPECT_EQ(est.steps(), 6);
}

TEST(NoiseScaleTest, EqualLocalBatchesStillSeparateThroughTheGlobalPoint) {
  const double G = 1, S = 64;
  NoiseScaleEstimator est;
  ASSERT_TRUE(est.add({16, 16, 16, 16}, {G + S / 16, G + S / 16, G + S / 16, G + S / 16}, 64, G + S / 64));
  EXPECT_NEAR(est.noise_scale(), 64, 1e-9);
}

TEST(NoiseScaleTest, GuardsAgainstDegenerateAndNegativeEstimates) {
  NoiseScaleEstimator est;
  EXPECT_EQ(est.noise_scale(), 0);
  EXPECT_FALSE(est.add({{32, 1.0}}));             // one point
  EXPECT_FALSE(est.add({{32, 1.0}, {32, 2.0}}));  // one distinct batch
  EXPECT_EQ(est.steps(), 0);
  // Norms that grow with b imply tr(Sigma) < 0: B_noise is reported unknown (0), not negative.
  ASSERT_TRUE(est.add({{8, 1.0}, {64, 3.0}}));
  EXPECT_LT(est.trace_sigma(), 0);
  EXPECT_EQ(est.noise_scale(), 0);
  // Non-finite entries are skipped.
  est.reset();
  ASSERT_TRUE(est.add({{8, 1 + 80 / 8.0}, {16, NAN}, {80, 1 + 80 / 80.0}, {-1, 5}}));
  EXPECT_NEAR(est.noise_scale(), 80, 1e-9);
  EXPECT_THROW(NoiseScaleEstimator({1.0}), Error);
}

TEST(NoiseScaleTest, SmoothsNoisyObservations) {
  const double G = 1, S = 256;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> z(0, 0.1);
  NoiseScaleEstimator est({0.98});
  const std::vector<int32_t> b = {48, 48, 24, 12};
  for (int step = 0; step < 400; ++step) {
    std::vector<double> y;
    for (int32_t bi : b) y.push_back((G + S / bi) * (1 + z(rng)));
    est.add(b, y, 132, (G + S / 132) * (1 + z(rng)));
  }
  EXPECT_NEAR(est.noise_scale(), 256, 0.25 * 256);
}

TEST(NoiseScaleTest, StatisticalEfficiency) {
  EXPECT_DOUBLE_EQ(statistical_efficiency(128, 128, 500), 1);
  EXPECT_DOUBLE_EQ(statistical_efficiency(1024, 128, 1000), 1128.0 / 2024.0);
  EXPECT_DOUBLE_EQ(statistical_efficiency(1024, 128, 0), 1);  // unknown B_noise: neutral
  EXPECT_GT(statistical_efficiency(64, 128, 100), 1);
}

}  // namespace
}  // namespace dynamix
