// DYNAMIX — ChangeAlarm: a rank 2x off its expected time for 3 steps in a row is a change; noise,
// single spikes and units are not.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "agent/change_alarm.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

// Feeds steps where rank `who` takes `factor` times its expected time and the others take theirs;
// returns the 1-based step at which the alarm fired (0: never).
int first_alarm(ChangeAlarm& alarm, const std::vector<double>& expected, size_t who,
                const std::vector<double>& factors) {
  for (size_t s = 0; s < factors.size(); ++s) {
    std::vector<double> step = expected;
    step[who] *= factors[s];
    if (alarm.observe(step)) return int(s) + 1;
  }
  return 0;
}

TEST(ChangeAlarm, ASlowdownHeldForThreeStepsFiresAtTheThird) {
  ChangeAlarm alarm;
  alarm.arm({0.03, 0.03, 0.03, 0.03});
  EXPECT_EQ(first_alarm(alarm, {0.03, 0.03, 0.03, 0.03}, 1, {1, 1.1, 4, 4, 4, 4}), 5);
}

TEST(ChangeAlarm, ASpeedupIsAChangeToo) {
  ChangeAlarm alarm;
  alarm.arm({0.12, 0.03});
  EXPECT_EQ(first_alarm(alarm, {0.12, 0.03}, 0, {0.25, 0.25, 0.25}), 3);
}

TEST(ChangeAlarm, SpikesAndNoiseAreNot) {
  ChangeAlarm alarm;
  alarm.arm({0.03, 0.03});
  // Two slow steps then a normal one, twice; then 30 steps within ±60 %.
  std::vector<double> f = {3, 3, 1, 5, 5, 0.9};
  for (int s = 0; s < 30; ++s) f.push_back(1 + 0.6 * std::sin(1.7 * s));
  EXPECT_EQ(first_alarm(alarm, {0.03, 0.03}, 1, f), 0);
  EXPECT_TRUE(alarm.armed());
}

// With confirm 0.5 (DynamixPolicy's), the rank's mean since the arming must be 50 % off as well.
// After 10 steps at the expected time, a 4x slowdown fires at its third step (mean 1.69x), as
// without it; a 2.4x slowdown waits until its sixth (mean 1.53x; 1.32x at the third), and a
// drift that puts 3 steps at 2.2x and goes back never fires.
TEST(ChangeAlarm, WithConfirmTheMeanSinceTheArmingMustShowTheChange) {
  ChangeAlarm::Options o;
  o.confirm = 0.5;
  auto after_ten = [&](std::vector<double> f) {
    ChangeAlarm alarm(o);
    alarm.arm({0.03, 0.03});
    f.insert(f.begin(), 10, 1.0);
    const int at = first_alarm(alarm, {0.03, 0.03}, 1, f);
    return at > 0 ? at - 10 : 0;
  };
  EXPECT_EQ(after_ten({4, 4, 4, 4}), 3);
  EXPECT_EQ(after_ten({2.4, 2.4, 2.4, 2.4, 2.4, 2.4, 2.4}), 6);
  EXPECT_EQ(after_ten({1.5, 2.2, 2.2, 2.2, 1.5, 1.2, 1, 1, 1}), 0);
  ChangeAlarm plain;
  plain.arm({0.03, 0.03});
  EXPECT_EQ(first_alarm(plain, {0.03, 0.03}, 1, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2.5, 2.5, 2.5}), 13);
}

// A rank followed in its slowdown is judged by the last quarter of the steps since the arming too:
// 3 more slow steps, then back at a third of the slow model's time, which the mean since the
// arming confirms only at the 9th fast step (the quarter at the 3rd; rank 0, not so flagged,
// waits as before). The flags must match the ranks.
TEST(ChangeAlarm, ARankInASlowdownIsConfirmedByTheRecentQuarter) {
  ChangeAlarm::Options o;
  o.confirm = 0.5;
  const std::vector<double> f = {1, 1, 1, 0.33, 0.33, 0.33, 0.33, 0.33, 0.33, 0.33, 0.33, 0.33, 0.33, 0.33};
  ChangeAlarm recent(o);
  recent.arm({0.03, 0.09}, {false, true});
  EXPECT_EQ(first_alarm(recent, {0.03, 0.09}, 1, f), 6);
  ChangeAlarm whole(o);
  whole.arm({0.03, 0.09});
  EXPECT_EQ(first_alarm(whole, {0.03, 0.09}, 1, f), 12);
  ChangeAlarm other(o);
  other.arm({0.09, 0.03}, {false, true});
  EXPECT_EQ(first_alarm(other, {0.09, 0.03}, 0, f), 12);
  EXPECT_THROW(other.arm({0.03, 0.09}, {true}), Error);
}

// A return confirmed by the quarter alone waits for another rank's change that the mean does not
// confirm yet, up to 3 steps (a moving wave: one group back, the next slowed, at the same step).
// After 10 steps as expected, rank 1 returns to a third of its time; rank 0 stays, slows 2.5x (its
// mean since the arming reaches 1.5x only at the sixth slow step) or slows 4x (confirmed at the
// third).
TEST(ChangeAlarm, AReturnByTheQuarterWaitsForAnotherRanksChange) {
  ChangeAlarm::Options o;
  o.confirm = 0.5;
  auto fired_at = [&](double other) {
    ChangeAlarm alarm(o);
    alarm.arm({0.03, 0.09}, {false, true});
    for (int s = 1; s <= 30; ++s) {
      const bool after = s > 10;
      if (alarm.observe({0.03 * (after ? other : 1.0), 0.09 * (after ? 0.33 : 1.0)})) return s - 10;
    }
    return 0;
  };
  EXPECT_EQ(fired_at(1.0), 3);
  EXPECT_EQ(fired_at(2.5), 5);
  EXPECT_EQ(fired_at(4.0), 3);
}

TEST(ChangeAlarm, FiresOncePerArming) {
  ChangeAlarm alarm;
  alarm.arm({1.0});
  EXPECT_EQ(first_alarm(alarm, {1.0}, 0, {3, 3, 3}), 3);
  EXPECT_FALSE(alarm.armed());
  EXPECT_EQ(first_alarm(alarm, {1.0}, 0, {3, 3, 3, 3, 3}), 0);
  alarm.arm({1.0});
  EXPECT_EQ(first_alarm(alarm, {1.0}, 0, {3, 3, 3}), 3);
}

TEST(ChangeAlarm, OnlyRatiosMatter) {
  for (double unit : {1e-3, 1.0, 1e3}) {
    ChangeAlarm alarm;
    alarm.arm({0.02 * unit, 0.05 * unit});
    EXPECT_EQ(first_alarm(alarm, {0.02 * unit, 0.05 * unit}, 1, {1, 2.1, 2.1, 2.1}), 4) << unit;
  }
}

TEST(ChangeAlarm, UnknownExpectationsAndTimesNeverFire) {
  ChangeAlarm alarm;
  EXPECT_FALSE(alarm.observe({1.0}));  // never armed
  alarm.arm({});
  EXPECT_FALSE(alarm.armed());
  alarm.arm({0.0, std::numeric_limits<double>::quiet_NaN(), 1.0});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int s = 0; s < 5; ++s) EXPECT_FALSE(alarm.observe({5.0, 5.0, nan}));
  EXPECT_THROW(alarm.observe({1.0}), Error);  // wrong number of ranks
  EXPECT_THROW(ChangeAlarm(ChangeAlarm::Options{1.0, 3}), Error);
}

}  // namespace
}  // namespace dynamix
