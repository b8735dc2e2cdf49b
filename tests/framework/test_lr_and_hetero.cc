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
  HeteroEmulator r1(c, 1, 3);
  r1.on_step(0);
  EXPECT_DOUBLE_EQ(r1.slowdown(), 2.0);
  EXPECT_DOUBLE_EQ(r1.compute_delay(0.5), 0.5);
  r1.on_step(10);
  EXPECT_DOUBLE_EQ(r1.slowdown(), 3.0);
  EXPECT_DOUBLE_EQ(r1.bandwidth_mbps(), 0.0);
  HeteroEmulator resumed(c, 1, 3);
  resumed.on_step(25);  // both events are due at once
  EXPECT_DOUBLE_EQ(resumed.slowdown(), 3.0);
  EXPECT_DOUBLE_EQ(resumed.bandwidth_mbps(), 100.0);
  HeteroEmulator r0(c, 0, 3);
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
  HeteroEmulator e(c, 1, 2);
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
  HeteroEmulator resumed(c, 1, 2);
  resumed.on_step(130);
  EXPECT_NEAR(resumed.slowdown(), seen[130], 1e-12);
  HeteroEmulator other(c, 0, 2);
  other.on_step(120);
  EXPECT_DOUBLE_EQ(other.slowdown(), 1.0);
}

TEST(HeteroEmulator, BandwidthCapDelayFollowsRingTraffic) {
  HeteroConfig c;
  c.bandwidth_mbps = {100.0};  // one value applies to every rank
  HeteroEmulator e(c, 0, 4);
  // 2 (N-1)/N * 1e6 bytes * 8 bits = 12e6 bits over 100 Mbit/s = 0.12 s.
  EXPECT_NEAR(e.comm_delay(1000000, 0.02), 0.10, 1e-12);
  EXPECT_DOUBLE_EQ(e.comm_delay(1000000, 0.5), 0.0);
  HeteroEmulator single(c, 0, 1);
  EXPECT_DOUBLE_EQ(single.comm_delay(1000000, 0.0), 0.0);
}

}  // namespace
}  // namespace dynamix
