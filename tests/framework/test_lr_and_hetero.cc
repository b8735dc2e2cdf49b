// DYNAMIX — learning-rate scaling with the global batch, and the heterogeneity emulator's arithmetic.
#include <gtest/gtest.h>

#include <cmath>

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

TEST(HeteroEmulator, SlowdownAndEventsIncludingCatchUpOnResume) {
  HeteroConfig c;
  c.slowdown = {1.0, 2.0, 4.0};
  HeteroEvent e1;
  e1.at_step = 10;
  e1.rank = 1;
  e1.slowdown = 3.0;
  HeteroEvent e2;
  e2.at_step = 20;
  e2.rank = 1;
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
