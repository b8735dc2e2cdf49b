// DYNAMIX — TrackingCadence: while speeds drift, a decision every quarter of the regular window
// (at least 3 steps), on the regular window's grid; steady speeds, or no regular window seen yet, ask for
// none.
#include <gtest/gtest.h>

#include <vector>

#include "agent/tracking_cadence.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

// Steps observed until the cadence asks (0: none within `limit`).
int steps_to_ask(TrackingCadence& cadence, bool tracking, int limit = 100) {
  for (int s = 1; s <= limit; ++s)
    if (cadence.observe(tracking)) return s;
  return 0;
}

TEST(TrackingCadence, WhileTrackingAsksEveryQuarterOfTheRegularWindowOnItsGrid) {
  TrackingCadence cadence;
  cadence.decided(0, 20);
  EXPECT_EQ(cadence.steps_due(), 5);
  // Asked at the 4th step, the decision comes after the 5th (BatchPolicy::wants_decision).
  EXPECT_EQ(steps_to_ask(cadence, true), 4);
  cadence.decided(5, 5);  // a tracking window does not shorten the regular one
  EXPECT_EQ(steps_to_ask(cadence, true), 4);
  cadence.decided(10, 5);
  EXPECT_EQ(steps_to_ask(cadence, true), 4);
  cadence.decided(15, 5);
  EXPECT_EQ(steps_to_ask(cadence, true, 5), 0);  // step 20 is the regular decision's
  cadence.decided(20, 5);
  EXPECT_EQ(steps_to_ask(cadence, true), 4);
  TrackingCadence longer;
  longer.decided(40, 40);
  EXPECT_EQ(steps_to_ask(longer, true), 9);
}

TEST(TrackingCadence, NoWindowOfFewerThanMinStepsBeforeTheRegularDecision) {
  TrackingCadence cadence;
  cadence.decided(0, 20);
  cadence.decided(13, 13);                       // brought forward by the change alarm
  EXPECT_EQ(steps_to_ask(cadence, true, 6), 0);  // steps 18 and 19 would leave 2 and 1
  cadence.decided(17, 4);
  EXPECT_EQ(steps_to_ask(cadence, true), 4);  // after step 22, 18 steps before step 40
}

// A request made after step s is answered after step s + 1: within 1 or 2 steps of the regular
// decision the regular one answers it; on the grid the two are one decision.
TEST(TrackingCadence, KnowsWhenTheRegularDecisionIsNear) {
  TrackingCadence cadence;
  EXPECT_FALSE(cadence.regular_decision_near());  // no regular window yet
  cadence.decided(20, 20);
  std::vector<int> near;
  for (int step = 21; step <= 40; ++step) {
    cadence.observe(false);
    if (cadence.regular_decision_near()) near.push_back(step);
  }
  EXPECT_EQ(near, (std::vector<int>{37, 38}));  // decisions after 38 and 39; after step 39 it is 40
}

TEST(TrackingCadence, SteadySpeedsAndUnknownWindowsNeverAsk) {
  TrackingCadence cadence;
  EXPECT_EQ(steps_to_ask(cadence, true), 0);  // no decision yet: no regular window
  cadence.decided(20, 20);
  EXPECT_EQ(steps_to_ask(cadence, false), 0);
  cadence.reset();
  EXPECT_EQ(cadence.steps_due(), 0);
  EXPECT_EQ(steps_to_ask(cadence, true), 0);
}

TEST(TrackingCadence, ShortWindowsKeepTheMinimumAndBadOptionsAreRefused) {
  TrackingCadence cadence;
  cadence.decided(0, 8);
  EXPECT_EQ(cadence.steps_due(), 3);
  EXPECT_EQ(steps_to_ask(cadence, true), 2);
  EXPECT_THROW(TrackingCadence({0, 3}), Error);
  EXPECT_THROW(TrackingCadence({4, 0}), Error);
}

}  // namespace
}  // namespace dynamix
