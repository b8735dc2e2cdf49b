// DYNAMIX — ChangeAlarm: a rank 2x off its expected time for 3 steps in a row is a change; noise,
// single spikes and units are not.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

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

// With `recent`, the mean of the last quarter of the steps since the arming confirms a change too:
// a 2.4x slowdown after 10 steps as expected fires at its third step (a quarter of 3 steps), not
// its sixth. A quarter shorter than 3 steps confirms only for a rank arm() names as slowed: one
// back at a third of its expected time after 3 more slow steps (a spell's end just after the
// decision that followed it) fires at its third fast step where flagged, at the ninth (the mean
// since the arming) where not. fired_ranks() names the rank.
TEST(ChangeAlarm, WithRecentTheLastQuarterConfirmsAChangeToo) {
  ChangeAlarm::Options o;
  o.confirm = 0.5;
  ChangeAlarm::Options r = o;
  r.recent = true;
  const std::vector<double> back = {1, 1, 1, 0.33, 0.33, 0.33, 0.33, 0.33, 0.33, 0.33, 0.33, 0.33, 0.33};
  std::vector<double> slow(10, 1.0);
  slow.insert(slow.end(), 8, 2.4);
  const std::vector<bool> none, slowed = {false, true};
  for (const auto& [f, flags, with, without] :
       {std::tuple{slow, none, 13, 16}, std::tuple{back, slowed, 5, 12}, std::tuple{back, none, 12, 12}}) {
    ChangeAlarm recent(r), whole(o);
    recent.arm({0.03, 0.09}, flags);
    whole.arm({0.03, 0.09});
    EXPECT_EQ(first_alarm(recent, {0.03, 0.09}, 1, f), with);
    EXPECT_EQ(recent.fired_ranks(), std::vector<bool>({false, true}));
    EXPECT_EQ(first_alarm(whole, {0.03, 0.09}, 1, f), without);
  }
  ChangeAlarm wrong(r);
  EXPECT_THROW(wrong.arm({0.03, 0.09}, {true}), Error);
}

// A rank named as slowed that runs 2x faster than its (slow) expectation is back: two steps fire.
// Not for a rank not so named, nor for one that slows further (docs/AGENT.md item 40).
TEST(ChangeAlarm, TheEndOfASlowdownFiresAtItsSecondStep) {
  const std::vector<double> expected = {0.03, 0.09};
  for (const auto& [flags, factors, at] :
       {std::tuple{std::vector<bool>{false, true}, std::vector<double>{1, 0.33, 0.33, 0.33}, 3},
        std::tuple{std::vector<bool>{false, false}, std::vector<double>{1, 0.33, 0.33, 0.33}, 4},
        std::tuple{std::vector<bool>{false, true}, std::vector<double>{1, 2.5, 2.5, 2.5}, 4},
        std::tuple{std::vector<bool>{false, true}, std::vector<double>{1, 0.33, 1, 0.33, 0.33}, 5}}) {
    ChangeAlarm alarm;
    alarm.arm(expected, flags);
    EXPECT_EQ(first_alarm(alarm, expected, 1, factors), at);
  }
}

// A change confirmed by the quarter alone waits, up to 3 steps, for another rank outside the band
// whose change does not show yet. After 10 steps as expected, rank 1 is back at a third of its
// time; rank 0 stays (fires at rank 1's third step), slows 2.2x two steps later (fires at its
// second slow step, where its quarter shows it, both ranks named), or takes one slow step (fires
// once it is back inside).
TEST(ChangeAlarm, AChangeByTheQuarterWaitsForAnotherRanksChangeUnderWay) {
  ChangeAlarm::Options o;
  o.confirm = 0.5;
  o.recent = true;
  auto fired_at = [&](int32_t first, int32_t last, std::vector<bool>* ranks) {
    ChangeAlarm alarm(o);
    alarm.arm({0.03, 0.09});
    for (int32_t s = 1; s <= 30; ++s) {
      const double other = s >= first && s <= last ? 2.2 : 1.0;
      if (alarm.observe({0.03 * other, 0.09 * (s > 10 ? 0.33 : 1.0)})) {
        *ranks = alarm.fired_ranks();
        return s - 10;
      }
    }
    return 0;
  };
  std::vector<bool> ranks;
  EXPECT_EQ(fired_at(100, 100, &ranks), 3);
  EXPECT_EQ(ranks, std::vector<bool>({false, true}));
  EXPECT_EQ(fired_at(13, 100, &ranks), 4);
  EXPECT_EQ(ranks, std::vector<bool>({true, true}));
  EXPECT_EQ(fired_at(13, 13, &ranks), 4);
  EXPECT_EQ(ranks, std::vector<bool>({false, true}));
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
