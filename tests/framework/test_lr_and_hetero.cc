// DYNAMIX — learning-rate scaling with the global batch, and the heterogeneity emulator's arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "framework/core/error.h"
#include "framework/train/hetero_emulator.h"
#include "framework/train/lr_schedule.h"

namespace dynamix {
namespace {

TEST(LrSchedule, ScalesWithGlobalBatch) {
  LrSchedule lr{0.1, 128, LrScaling::kLinear, 0};
  EXPECT_DOUBLE_EQ(lr.at(0, 256), 0.2);
  lr.scaling = LrScaling::kSqrt;
  EXPECT_DOUBLE_EQ(lr.at(0, 512), 0.2);
  lr.scaling = LrScaling::kNone;
  EXPECT_DOUBLE_EQ(lr.at(0, 512), 0.1);
}

TEST(LrSchedule, LinearWarmup) {
  LrSchedule lr{0.1, 100, LrScaling::kLinear, 10};
  EXPECT_DOUBLE_EQ(lr.at(0, 100), 0.01);
  EXPECT_DOUBLE_EQ(lr.at(4, 100), 0.05);
  EXPECT_DOUBLE_EQ(lr.at(9, 200), 0.2);
  EXPECT_DOUBLE_EQ(lr.at(50, 200), 0.2);
}

HeteroEvent event_at(int64_t at_step, int32_t rank) {
  HeteroEvent e;
  e.at_step = at_step;
  e.rank = rank;
  return e;
}

TEST(HeteroEmulator, SlowdownAndEventsIncludingCatchUpOnResume) {
  HeteroConfig c;
  c.slowdown = {1.0, 2.0, 4.0};
  HeteroEvent e1 = event_at(10, 1);
  e1.slowdown = 3.0;
  HeteroEvent e2 = event_at(20, 1);
  e2.bandwidth_mbps = 100.0;
  c.events = {e1, e2};
  HeteroEmulator r1(c, 1, 3, 1);
  r1.on_step(0);
  EXPECT_DOUBLE_EQ(r1.slowdown(), 2.0);
  EXPECT_DOUBLE_EQ(r1.compute_delay(0.5), 0.5);
  r1.on_step(10);
  EXPECT_DOUBLE_EQ(r1.slowdown(), 3.0);
  EXPECT_DOUBLE_EQ(r1.bandwidth_mbps(), 0.0);
  HeteroEmulator resumed(c, 1, 3, 1);
  resumed.on_step(25);  // both events are due at once
  EXPECT_DOUBLE_EQ(resumed.slowdown(), 3.0);
  EXPECT_DOUBLE_EQ(resumed.bandwidth_mbps(), 100.0);
  HeteroEmulator r0(c, 0, 3, 1);
  r0.on_step(25);
  EXPECT_DOUBLE_EQ(r0.slowdown(), 1.0);
  EXPECT_DOUBLE_EQ(r0.compute_delay(0.5), 0.0);
}

// A drift on rank 1 from step 100, up to 4x every 40 steps, over a step change to 2x at step 120:
// the factors multiply, and a resumed run computes the same slowdown at once.
TEST(HeteroEmulator, ADriftMovesTheSlowdownSmoothlyAndMultipliesStepChanges) {
  HeteroConfig c;
  HeteroEvent drift = event_at(100, 1);
  drift.slowdown = 4.0;
  drift.period_steps = 40;
  HeteroEvent change = event_at(120, 1);
  change.slowdown = 2.0;
  c.events = {drift, change};
  HeteroEmulator e(c, 1, 2, 1);
  std::vector<double> seen;
  for (int64_t step = 0; step <= 140; ++step) {
    e.on_step(step);
    seen.push_back(e.slowdown());
  }
  EXPECT_DOUBLE_EQ(seen[99], 1.0);
  EXPECT_NEAR(seen[100], 1.0, 1e-12);
  EXPECT_NEAR(seen[110], 2.0, 1e-12);  // a quarter period: sqrt(4)
  EXPECT_NEAR(seen[119], std::pow(4.0, 0.5 * (1 - std::cos(2 * M_PI * 19 / 40))), 1e-12);
  EXPECT_NEAR(seen[120], 2.0 * 4.0, 1e-12);  // half a period, times the step change
  EXPECT_NEAR(seen[140], 2.0, 1e-12);        // a full period: the step change alone
  for (size_t k = 101; k < 120; ++k) EXPECT_LT(std::fabs(std::log(seen[k] / seen[k - 1])), 0.15) << k;
  EXPECT_NEAR(e.compute_delay(0.1), (2.0 - 1.0) * 0.1, 1e-12);
  HeteroEmulator resumed(c, 1, 2, 1);
  resumed.on_step(130);
  EXPECT_NEAR(resumed.slowdown(), seen[130], 1e-12);
  HeteroEmulator other(c, 0, 2, 1);
  other.on_step(120);
  EXPECT_DOUBLE_EQ(other.slowdown(), 1.0);
}

// Jitter: each step's slowdown times a mean-one log-normal draw with that relative std, fixed by
// (seed, rank, step) alone, so a resumed run draws what the uninterrupted one did.
TEST(HeteroEmulator, JitterScattersEachStepWithTheGivenSpreadAndIsReproducible) {
  HeteroConfig c;
  c.slowdown = {4.0};
  c.jitter = {0.0, 0.3};
  HeteroEmulator steady(c, 0, 2, 7), shared(c, 1, 2, 7), same(c, 1, 2, 7), other_seed(c, 1, 2, 8);
  const int n = 20000;
  double sum = 0, sum_sq = 0;
  int differ = 0;
  for (int64_t step = 0; step < n; ++step) {
    steady.on_step(step);
    EXPECT_DOUBLE_EQ(steady.slowdown(), 4.0);
    shared.on_step(step);
    same.on_step(step);
    other_seed.on_step(step);
    EXPECT_DOUBLE_EQ(same.slowdown(), shared.slowdown());
    differ += other_seed.slowdown() != shared.slowdown();
    const double f = shared.slowdown() / 4.0;
    sum += f;
    sum_sq += f * f;
  }
  const double mean = sum / n, sd = std::sqrt(sum_sq / n - mean * mean);
  EXPECT_NEAR(mean, 1.0, 0.01);  // standard error 0.002
  EXPECT_NEAR(sd, 0.3, 0.015);
  EXPECT_GT(differ, n - 10);
  HeteroEmulator resumed(c, 1, 2, 7);
  resumed.on_step(n - 1);
  EXPECT_DOUBLE_EQ(resumed.slowdown(), shared.slowdown());
}

TEST(HeteroEmulator, BandwidthCapDelayFollowsRingTraffic) {
  HeteroConfig c;
  c.bandwidth_mbps = {100.0};  // one value applies to every rank
  HeteroEmulator e(c, 0, 4, 1);
  // 2 (N-1)/N * 1e6 bytes * 8 bits = 12e6 bits over 100 Mbit/s = 0.12 s.
  EXPECT_NEAR(e.comm_delay(1000000, 0.02), 0.10, 1e-12);
  EXPECT_DOUBLE_EQ(e.comm_delay(1000000, 0.5), 0.0);
  HeteroEmulator single(c, 0, 1, 1);
  EXPECT_DOUBLE_EQ(single.comm_delay(1000000, 0.0), 0.0);
}

}  // namespace
}  // namespace dynamix
