// DYNAMIX — SteadyLevels: ranks a little apart under heavy step noise are told apart by every
// window since their last change; equal ranks are not, and a change of speed starts over.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "agent/rank_models.h"
#include "agent/steady_levels.h"
#include "model_window.h"

namespace dynamix {
namespace {

// Windows of 5 steps at 30 % step noise (a window mean scatters by about 13 %) on ranks of the
// given speeds (time factors), all at 32 samples; returns the first window (1-based) after which
// the ranks were found apart, or 0 if never within `windows`.
int windows_until_apart(const std::vector<double>& slow, int windows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, 0.3 / std::sqrt(5.0));
  RankTimeModels models;
  SteadyLevels steady;
  const std::vector<int32_t> b(slow.size(), 32);
  for (int w = 1; w <= windows; ++w) {
    std::vector<double> noisy(slow.size());
    for (size_t i = 0; i < slow.size(); ++i) noisy[i] = slow[i] * std::exp(normal(rng));
    const ClusterState s = model_window(5 * w, b, noisy, {}, 5);
    models.observe(s);
    steady.observe(s, models, {});
    if (steady.apart()) return w;
  }
  return 0;
}

TEST(SteadyLevels, RanksFifteenPercentApartUnderHeavyNoiseAreFoundApart) {
  // Random suite 32's static_r013: 3 ranks at 1x, 2 at 1/0.85x, 2 at 1/0.96x.
  const std::vector<double> slow = {1, 1, 1, 1 / 0.85, 1 / 0.85, 1 / 0.96, 1 / 0.96};
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const int w = windows_until_apart(slow, 200, seed);
    EXPECT_GE(w, SteadyLevels::kMinWindows) << "seed " << seed;
    EXPECT_LE(w, 60) << "seed " << seed;
  }
}

TEST(SteadyLevels, EqualRanksAreNotFoundApart) {
  // 7 and 64 equal ranks, 400 windows each (the latch would keep any false alarm): at most one run
  // of twenty may raise one.
  int alarms = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    alarms += windows_until_apart(std::vector<double>(7, 1.0), 400, seed) > 0;
    alarms += windows_until_apart(std::vector<double>(64, 1.0), 400, 100 + seed) > 0;
  }
  EXPECT_LE(alarms, 1);
}

TEST(SteadyLevels, APlanChangeKeepsTheFindingAndARestartClearsIt) {
  RankTimeModels models;
  SteadyLevels steady;
  const std::vector<double> apart = {1, 1, 1.3, 1.3};
  const std::vector<double> alternating = {1.02, 0.98, 1.02, 0.98};
  int w = 1;
  auto window = [&](const std::vector<int32_t>& b, const std::vector<double>& slow) {
    std::vector<double> t(slow.size());
    for (size_t i = 0; i < t.size(); ++i) t[i] = slow[i] * (w % 2 ? alternating[i] : 1 / alternating[i]);
    const ClusterState s = model_window(10 * w++, b, t);
    models.observe(s);
    steady.observe(s, models, {});
  };
  for (int k = 0; k < SteadyLevels::kMinWindows; ++k) window({32, 32, 32, 32}, apart);
  ASSERT_TRUE(steady.apart());
  window({36, 36, 28, 28}, apart);  // the plan follows the speeds: still apart
  EXPECT_TRUE(steady.apart());
  window({36, 36, 28, 28}, {1, 1, 2.6, 2.6});  // ranks 2-3 slow 2x: their models restart
  EXPECT_FALSE(steady.apart());
}

TEST(SteadyLevels, WindowsWithASpellAreLeftOut) {
  RankTimeModels models;
  SteadyLevels steady;
  const std::vector<uint8_t> spell = {0, 0, RankTimeModels::kSpellSeen, RankTimeModels::kSpellSeen};
  for (int w = 1; w <= 30; ++w) {
    // Equal ranks whose windows with a spell show ranks 2-3 at 1.3x: not a difference of speed.
    const bool spelled = w % 3 == 0;
    const ClusterState s =
        model_window(10 * w, {32, 32, 32, 32},
                     spelled ? std::vector<double>{1, 1.01, 1.3, 1.3}
                             : std::vector<double>{w % 2 ? 1.01 : 0.99, 1, 1, w % 2 ? 0.99 : 1.01});
    models.observe(s, spelled ? &spell : nullptr);
    steady.observe(s, models, spelled ? spell : std::vector<uint8_t>{});
  }
  EXPECT_FALSE(steady.apart());
}

}  // namespace
}  // namespace dynamix
