// DYNAMIX — PPO learns load balancing in the simulator: 4 nodes, speeds 1 : 1 : 0.5 : 0.25.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include "agent/plan_projection.h"
#include "agent/ppo/default_policy.h"
#include "agent/ppo/dynamix_policy.h"
#include "agent/ppo/moves.h"
#include "agent/ppo/pretrain.h"
#include "agent/rank_models.h"
#include "agent/sim/cluster_simulator.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

// Measured bounds the shipped policy must keep (docs/AGENT.md, "Invariants").
constexpr int32_t kHomogeneousTolerance = 0;  // samples of 32, at up to 20 % step noise
constexpr int kWindowsToBalance = 14;

// Budget (also in docs/AGENT.md): kEpisodes episodes of kWindows decisions of 5 simulated steps,
// from scratch, fixed seeds; then one greedy (argmax) episode is scored.
// 150 episodes: with 60, 4 of seeds 1-10 left the holding prior in time (the initial weights
// changed with the portable init of 2026-11-27); with 150, all 10 reach 0.97 of the ideal.
constexpr int64_t kEpisodes = 150;
constexpr int64_t kWindows = 24;

SimConfig nodes_at(std::vector<double> speeds, uint64_t seed, double noise = 0.05) {
  SimConfig c;
  c.nodes = int32_t(speeds.size());
  c.seed = seed;
  for (double speed : speeds) {
    c.alpha_s.push_back(c.workload.alpha_s / speed);
    c.beta_s.push_back(c.workload.beta_s / speed);
  }
  c.workload.noise = noise;
  c.workload.target_progress = 1e12;  // episodes end by window count
  return c;
}

SimConfig four_nodes(uint64_t seed) { return nodes_at({1.0, 1.0, 0.5, 0.25}, seed); }

// Ranks whose speeds wander, as ranks sharing cores do: each of 4 ranks up to `max_slower` times
// slower for three 20-step windows at a time, staggered by 15 steps, over 2400 steps.
void add_wandering(SimConfig& c, uint64_t seed, double max_slower) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> slower(1.0, max_slower);
  for (int32_t rank = 0; rank < 4; ++rank) {
    for (int64_t t = 15 * rank; t < 2400; t += 60) c.events.push_back({t, {rank}, slower(rng), 60, 0});
  }
}

BatchBounds bounds(int32_t global = 128) {
  BatchBounds b;
  b.min = 1;
  b.max = {256};
  b.fixed_global = true;
  b.global_batch = global;
  b.max_change = 0.5;
  return b;
}

DynamixOptions shipped() {
  DynamixOptions o;
  o.learn = false;
  o.ppo.background_update = false;
  o.archive = default_policy_archive();
  o.archive_name = kDefaultPolicyName;
  return o;
}

// Learning works: an untrained head that holds every plan (the prior on "balanced" turned off)
// learns to balance four unequal nodes.
TEST(PpoSim, LearnsToBalanceFourNodesFromAHoldingStart) {
  PpoConfig c;
  c.hidden = {32, 32};
  c.rollout_windows = 96;
  c.learning_rate = 1e-3;
  c.background_update = false;  // deterministic under the fixed seed
  c.prior_action = kHold;       // the untrained head keeps every plan
  c.prior_logit = 3;
  c.prior_kl_coef = 0;  // no pull back toward this deliberately useless prior
  c.seed = 3;
  DynamixOptions o;
  o.ppo = c;
  DynamixPolicy policy(o);

  ClusterSimulator uniform(four_nodes(11), bounds(), {32}, 5);
  DynamixOptions frozen = o;
  frozen.learn = false;
  DynamixPolicy untrained(frozen);
  const double before = run_sim_episode(untrained, uniform, kWindows).final_ideal_ratio;

  for (int64_t ep = 0; ep < kEpisodes; ++ep) {
    ClusterSimulator sim(four_nodes(100 + ep), bounds(), {32}, 5);
    EpisodeResult r = run_sim_episode(policy, sim, kWindows);
    if (ep % 10 == 9) {
      std::cout << "episode " << ep + 1 << " reward " << r.mean_reward << " ideal_ratio " << r.ideal_ratio
                << " end " << r.final_ideal_ratio << " updates " << policy.updates() << "\n";
    }
  }
  policy.set_learning(false);
  ClusterSimulator eval(four_nodes(11), bounds(), {32}, 5);
  EpisodeResult r = run_sim_episode(policy, eval, kWindows);
  std::cout << "untrained (argmax) end-of-episode throughput/ideal " << before << ", trained "
            << r.final_ideal_ratio << " (mean over the episode " << r.ideal_ratio << ")\n";
  EXPECT_LT(before, 0.8);
  EXPECT_GE(r.final_ideal_ratio, 0.90);
}

// Every time field times k and every rate over k (a cluster k times slower), or bytes times k.
ClusterState scaled(ClusterState s, double time_k, double bytes_k) {
  for (NodeRecord& r : s.nodes) {
    for (double* t :
         {&r.compute_s, &r.compute_recent_s, &r.comm_s, &r.wait_s, &r.data_s, &r.optimizer_s, &r.net_srtt_us})
      *t *= time_k;
    r.samples_per_s /= time_k;
    r.net_retransmits_per_s /= time_k;
    r.net_tx_bytes_per_s *= bytes_k / time_k;
    r.net_rx_bytes_per_s *= bytes_k / time_k;
    r.gpu_mem_used_bytes *= bytes_k;
    r.gpu_mem_total_bytes *= bytes_k;
  }
  return s;
}

ClusterState permuted(ClusterState s, const std::vector<size_t>& perm) {
  ClusterState p = s;
  for (size_t i = 0; i < perm.size(); ++i) {
    p.nodes[i] = s.nodes[perm[i]];
    p.bounds.max[i] = s.bounds.max[perm[i]];
  }
  return p;
}

TEST(ShippedPolicy, PlansIgnoreUnitsAndFollowRankOrder) {
  SimConfig c = nodes_at({1.0, 0.8, 0.5, 0.5, 0.3, 1.0, 0.25, 0.7}, 5, 0.1);
  c.events.push_back({200, {1}, 3.0, 0});
  BatchBounds b = bounds(256);
  b.max.assign(8, 256);
  ClusterSimulator sim(c, b, {32}, 10);
  DynamixPolicy base(shipped()), slow(shipped()), big(shipped()), perm(shipped());
  const std::vector<size_t> order = {3, 7, 0, 5, 1, 6, 2, 4};
  ClusterState s = sim.reset();
  for (int w = 0; w < 30; ++w) {
    const BatchPlan p = base.decide(s);
    EXPECT_EQ(slow.decide(scaled(s, 1000, 1)).batch_sizes, p.batch_sizes) << "window " << w;
    EXPECT_EQ(big.decide(scaled(s, 1, 1000)).batch_sizes, p.batch_sizes) << "window " << w;
    const BatchPlan q = perm.decide(permuted(s, order));
    for (size_t i = 0; i < order.size(); ++i)
      EXPECT_EQ(q.batch_sizes[i], p.batch_sizes[order[i]]) << "window " << w;
    s = sim.step_window(p);
  }
}

TEST(ShippedPolicy, HomogeneousClusterWithNoiseKeepsItsPlan) {
  for (double noise : {0.05, 0.1, 0.2}) {
    ClusterSimulator sim(nodes_at(std::vector<double>(8, 1.0), 9, noise), bounds(256), {32}, 20);
    DynamixPolicy policy(shipped());
    ClusterState s = sim.reset();
    int32_t worst = 0;
    for (int w = 0; w < 40; ++w) {
      const BatchPlan p = policy.decide(s);
      for (int32_t b : p.batch_sizes) worst = std::max(worst, std::abs(b - 32));
      s = sim.step_window(p);
    }
    std::cout << "per-step noise " << noise << ": largest move from 32 in 40 windows " << worst << "\n";
    EXPECT_LE(worst, kHomogeneousTolerance) << "noise " << noise;
  }
}

// Equal ranks on an uneven plan (docs/AGENT.md item 29): the split of noisy models gains too little
// over a plan one or two samples off the even one to pass the move floor, so until 2026-12-06 such
// a plan, left by a restart that noise caused, was kept for good (random homogeneous clusters at
// 28 % step noise and windows of 5 ran 0.1-0.4 % behind static). Ranks the homogeneous hold finds
// equal now take the even split where the uneven plan does not beat it by the floor.
TEST(ShippedPolicy, EqualRanksOnAnUnevenPlanReturnToTheEvenSplit) {
  for (double noise : {0.05, 0.2}) {
    ClusterSimulator sim(nodes_at(std::vector<double>(8, 1.0), 9, noise), bounds(256),
                         {30, 34, 31, 33, 32, 32, 33, 31}, 20);
    DynamixPolicy policy(shipped());
    ClusterState s = sim.reset();
    int32_t spread = 0;
    for (int w = 0; w < 20; ++w) {
      const BatchPlan p = policy.decide(s);
      const auto [lo, hi] = std::minmax_element(p.batch_sizes.begin(), p.batch_sizes.end());
      spread = *hi - *lo;
      s = sim.step_window(p);
    }
    std::cout << "per-step noise " << noise << ": plan spread after 20 windows " << spread << "\n";
    EXPECT_EQ(spread, 0) << "noise " << noise;
  }
}

// Equal ranks whose speeds wander a little and for a while, as 4 ranks sharing 2 cores do on a
// real machine: each rank is up to 10 % slower for three windows at a time, at its own offset.
// The last window forecasts the next better than the models in a quarter of the windows
// (tracking()); there the plan moves only where its predicted gain clears persistence's own
// forecast error. Following every window instead (v2.10) changed the plan in 68 of 120 windows,
// by up to 4 of 32, for the same throughput (0.9734 of the noiseless ideal either way): 29, by up
// to 2 (0.9731; 0.9957 of the balanced plan under the same noise; v2.11 made 26 changes, before
// the drift forecast of item 14). Since v2.17 no move forecast to gain under 4 % of the step is
// taken (DynamixOptions::min_move_gain): none, at 0.9961. Without that floor the 29 changes come
// back.
int32_t changes_on_wandering_equal_ranks(double min_move_gain, int32_t* worst, int32_t* tracked,
                                         double* ideal_fraction) {
  SimConfig c = nodes_at(std::vector<double>(4, 1.0), 13, 0.05);
  add_wandering(c, 5, 1.1);
  ClusterSimulator sim(c, bounds(128), {32}, 20);
  DynamixOptions options = shipped();
  options.min_move_gain = min_move_gain;
  DynamixPolicy policy(options);
  RankTimeModels::Options o;
  o.score_persistence = true;
  RankTimeModels watch(o);  // whether these windows make persistence the better forecast
  ClusterState s = sim.reset();
  int32_t changes = 0;
  *worst = *tracked = 0;
  std::vector<int32_t> last(4, 32);
  for (int w = 0; w < 120; ++w) {
    const BatchPlan p = policy.decide(s);
    for (int32_t b : p.batch_sizes) *worst = std::max(*worst, std::abs(b - 32));
    changes += p.batch_sizes != last;
    last = p.batch_sizes;
    s = sim.step_window(p);
    watch.observe(s);
    *tracked += watch.tracking();
  }
  *ideal_fraction = sim.totals().ideal_fraction();
  return changes;
}

TEST(ShippedPolicy, EqualRanksWhoseSpeedsWanderAreNotChased) {
  int32_t worst = 0, tracked = 0, worst_free = 0, tracked_free = 0;
  double ideal = 0, ideal_free = 0;
  const int32_t changes =
      changes_on_wandering_equal_ranks(DynamixOptions{}.min_move_gain, &worst, &tracked, &ideal);
  const int32_t free = changes_on_wandering_equal_ranks(0, &worst_free, &tracked_free, &ideal_free);
  std::cout << "wandering equal ranks: tracking in " << tracked << " of 120 windows, " << changes
            << " plan changes, largest move from 32 " << worst << ", ideal fraction " << ideal
            << "; without the least gain: " << free << " changes, largest " << worst_free << ", ideal "
            << ideal_free << "\n";
  EXPECT_GT(tracked, 0);  // the case this test is about
  EXPECT_LE(changes, 5);
  EXPECT_LE(worst, 2);
  EXPECT_GE(free, 20);  // the floor, not the rest of the policy, keeps the plan
  EXPECT_LE(worst_free, 2);
  EXPECT_GE(ideal, ideal_free - 0.002);
}

// Equal ranks that wander a little (up to 1.1x, as 4 ranks on 2 cores do), and a spell: ranks 2
// and 3 run 3x slower for 12 steps from step 300. It is followed (a run's first spells are), and
// once both are back the plan returns to the one in force before it, unless the split beats that by
// the move floor: the split of the models' return lands a sample or two off it, which the floor
// then kept (a real run kept [32, 33, 31, 32] for 370 steps; docs/AGENT.md item 25). Over 20 seeds
// the plan at step 360 is the one before the spell in 18, and in 5 with the code before.
// The same spell at 2.5x (item 26): the model of the slow speed, fitted through the origin at 32
// samples, read at the 17-19 the spell left a rank at, missed its return by 0.49, inside the restart
// threshold, and the rank stayed low; 14 seeds restored, 3 with a rank 5-15 samples off. Since the
// spell's end seen step by step is read as the return: 18 restored, none over 4 off.
struct SpellReturn {
  std::vector<int32_t> before, followed, after;
};
SpellReturn follow_one_spell(uint64_t seed, double factor) {
  SimConfig c = nodes_at(std::vector<double>(4, 1.0), seed, 0.05);
  add_wandering(c, seed, 1.1);
  c.events.push_back({300, {2, 3}, factor, 12, 0});
  ClusterSimulator sim(c, bounds(128), {32}, 20);
  DynamixPolicy policy(shipped());
  ClusterState s = sim.reset(&policy);
  SpellReturn r;
  while (s.global.step < 360) {
    const BatchPlan p = policy.decide(s);
    if (s.global.step < 300) r.before = p.batch_sizes;
    if (s.global.step >= 300 && r.followed.empty() && p.batch_sizes != r.before) r.followed = p.batch_sizes;
    r.after = p.batch_sizes;
    s = sim.step_window(p, &policy);
  }
  return r;
}

TEST(ShippedPolicy, TheReturnFromAFollowedSpellRestoresThePlanBeforeIt) {
  for (double factor : {3.0, 2.5}) {
    int32_t restored = 0;
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      const SpellReturn r = follow_one_spell(seed, factor);
      ASSERT_EQ(r.followed.size(), 4u) << factor << "x, seed " << seed << ": the spell was not followed";
      EXPECT_LT(r.followed[2], 24) << factor << "x, seed " << seed;
      restored += r.after == r.before;
      for (size_t i = 0; i < 4; ++i)
        EXPECT_LE(std::abs(r.after[i] - r.before[i]), 4) << factor << "x, seed " << seed;
    }
    std::cout << factor << "x: the plan before the spell restored in " << restored << " of 20 seeds\n";
    EXPECT_GE(restored, 17) << factor << "x";
  }
}

// A spell of 8 steps at 3x on two of four equal ranks (15 % step noise), mid-window, is followed; once it is
// over, the plan before it (within 2 samples) is back within 4 steps of its end in 14 of 20 seeds (the change
// alarm confirms a rank in a slowdown by its last steps, as the models read its return), not at the window's
// end (in the others a step inside the alarm's band, or a quarter the models do not read as a return under
// this noise). Before, the alarm waited for the mean since the follow, which the spell's last slow steps kept
// up: 0 of 20 here, and a real run kept the followed plan for 12-16 steps after each spell ([47, 45, 19, 17]
// for 12 steps after a spell's end at step 68), 40 % slower steps, and lost to static.
TEST(ShippedPolicy, AFollowedSpellsEndIsAnsweredWithinTheWindow) {
  auto near = [](const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    for (size_t i = 0; i < a.size(); ++i)
      if (std::abs(a[i] - b[i]) > 2) return false;
    return true;
  };
  int32_t answered = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SimConfig c = nodes_at(std::vector<double>(4, 1.0), seed, 0.15);
    c.events.push_back({305, {2, 3}, 3.0, 8, 0});
    ClusterSimulator sim(c, bounds(128), {32}, 20);
    DynamixPolicy policy(shipped());
    ClusterState s = sim.reset(&policy);
    std::vector<int32_t> before, current;
    int64_t followed_at = -1, back_at = -1;
    while (s.global.step < 340 && back_at < 0) {
      const BatchPlan p = policy.decide(s);
      if (s.global.step <= 305) before = p.batch_sizes;
      if (followed_at < 0 && s.global.step > 305 && p.batch_sizes != before) followed_at = s.global.step;
      if (followed_at >= 0 && s.global.step > followed_at && near(p.batch_sizes, before))
        back_at = s.global.step;
      s = sim.step_window(p, &policy);
    }
    ASSERT_GE(followed_at, 0) << "seed " << seed << ": the spell was not followed";
    EXPECT_LE(followed_at, 310) << "seed " << seed;
    answered += back_at >= 0 && back_at <= 313 + 4;
    std::cout << "seed " << seed << ": followed at step " << followed_at << ", back at " << back_at << "\n";
  }
  std::cout << "back within 4 steps of the spell's end in " << answered << " of 20 seeds\n";
  EXPECT_GE(answered, 10);
}

// The run's first window has no model to judge a spell by: a real run of four equal ranks had two
// of them 2.5x slower for 7 of the window's 18 steps, its mean read them as 1.7x slower, and the
// first decision moved the plan to [35, 36, 29, 28], which took 160 steps to come back. Each rank's
// own first steps are now its reference (SpellWatch before the first decision): a spell over by the
// decision keeps the plan, and one still open is the ranks' speed now, read by the window's last
// quarter as a restart is (the window's mean, half before it, read a lasting 2.5x slowdown begun at
// step 9 as 1.5x and moved the two ranks to 21-24 of their balanced 18). A spell begun at the
// second step after the start-up ones (at_step 3, 20 % step noise, as on the real cell) hid in the
// reference's first steps until those were judged again (docs/AGENT.md item 35): 3 of 10 seeds
// then moved at step 20, to [30, 38, 30, 30] and the like. Where StartCheck brings the first
// decision forward while the spell is on, the spell is the ranks' speed as far as anyone can tell.
TEST(ShippedPolicy, ASpellInTheFirstWindowIsNotReadAsTheRanksSpeed) {
  const std::vector<int32_t> even(4, 32);
  for (const int64_t begins : {3, 6, 9}) {
    const bool lasts = begins == 9;
    int32_t brought_forward = 0;
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      SimConfig c = nodes_at(std::vector<double>(4, 1.0), seed, begins == 3 ? 0.2 : 0.1);
      c.events.push_back(lasts ? SimEvent{begins, {2, 3}, 2.5, 0, 0} : SimEvent{begins, {2, 3}, 2.5, 7, 0});
      ClusterSimulator sim(c, bounds(128), {32}, 20);
      DynamixPolicy policy(shipped());
      ClusterState s = sim.reset(&policy);
      const std::vector<int32_t> plan = policy.decide(s).batch_sizes;
      const std::string shown = "spell from step " + std::to_string(begins) + ", seed " +
                                std::to_string(seed) + ", step " + std::to_string(s.global.step) + ": [" +
                                std::to_string(plan[0]) + "," + std::to_string(plan[1]) + "," +
                                std::to_string(plan[2]) + "," + std::to_string(plan[3]) + "]";
      if (!lasts && s.global.step < 20) {
        ++brought_forward;
        continue;
      }
      ASSERT_EQ(s.global.step, 20) << shown;
      if (lasts) {
        EXPECT_LE(plan[2], 20) << shown;
        EXPECT_LE(plan[3], 20) << shown;
      } else {
        EXPECT_EQ(plan, even) << shown;
      }
    }
    EXPECT_LE(brought_forward, 3) << "spell from step " << begins;
  }
}

// A spell over the run's first 6 steps: StartCheck reads the two ranks as 2.7x slower, as anyone
// would from those steps, and the first decision moves batch off them. Back at their speed at the
// batch it left them, they run 2-2.5x faster than their first window's model, beyond what any
// fixed cost explains: the models restart, and at step 20 the plan is even within 4 samples in 7
// of the 9 seeds that moved, within 13 in all. The models had waited for a second window: 0 of 9
// within 4, spreads of 20-27 samples, and the plan crawled back over 60-240 steps (a real run held
// [31, 31, 30, 36] for 240; docs/AGENT.md item 36).
TEST(ShippedPolicy, ASpellOverTheFirstStepsIsUndoneWhenTheRanksAreBack) {
  int32_t moved = 0, back = 0;
  std::string shown;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    SimConfig c = nodes_at(std::vector<double>(4, 1.0), seed, 0.15);
    c.events.push_back({0, {2, 3}, 2.7, 6, 0});
    ClusterSimulator sim(c, bounds(128), {32}, 20);
    DynamixPolicy policy(shipped());
    ClusterState s = sim.reset(&policy);
    BatchPlan p = policy.decide(s);
    if (s.global.step >= 20 || p.batch_sizes[2] >= 28) continue;  // not the case of this test
    ++moved;
    while (s.global.step < 20) {
      s = sim.step_window(p, &policy);
      p = policy.decide(s);
    }
    const auto [lo, hi] = std::minmax_element(p.batch_sizes.begin(), p.batch_sizes.end());
    back += *hi - *lo <= 4;
    EXPECT_LE(*hi - *lo, 15) << "seed " << seed;
    shown += " seed " + std::to_string(seed) + ": [" + std::to_string(p.batch_sizes[0]) + "," +
             std::to_string(p.batch_sizes[1]) + "," + std::to_string(p.batch_sizes[2]) + "," +
             std::to_string(p.batch_sizes[3]) + "]";
  }
  EXPECT_GE(moved, 8);
  EXPECT_GE(back, 6) << shown;
}

// The simulated spells cell's seed 155 (scripts/experiments/spells_cell_sim.py): equal ranks, ranks
// 2-3 3x slower for 6-9 steps five times a run. At step 336 the alarm's decision follows the fourth
// spell; the regular decision at 340, told by the spells before that this one ends within a step,
// holds that follow plan; the spell ends at 340. Until item 39 the decision on its end kept the
// follow plan as a held spell's ("the spell held through is over: plan kept"), as the real cell did
// for 36 steps (and the cell's seed 25, before item 40, for 60). A held spell's end restores the
// plan before it wherever the plan in force followed it (docs/AGENT.md item 39).
TEST(ShippedPolicy, AFollowHeldThroughItsSpellsEndIsUndone) {
  SimConfig c = parse_sim_config(R"(
nodes: 4
seed: 155
max_steps: 469
profile: {classes: [{count: 4, speed: 1.0}]}
events:
  - {at_step: 57, ranks: [2, 3], slowdown: 3.0, duration_steps: 8}
  - {at_step: 153, ranks: [2, 3], slowdown: 3.0, duration_steps: 9}
  - {at_step: 241, ranks: [2, 3], slowdown: 3.0, duration_steps: 9}
  - {at_step: 332, ranks: [2, 3], slowdown: 3.0, duration_steps: 8}
  - {at_step: 397, ranks: [2, 3], slowdown: 3.0, duration_steps: 6}
workload: {alpha_s: 0.002, beta_s: 0.0006, grad_bytes: 1.7e6, bandwidth_gbps: 4, latency_us: 50,
           target_progress: 1.0e12, noise: 0.15, switch_cost: 0.0}
)");
  BatchBounds b = bounds(128);
  b.min = 8;
  b.max = {512};
  ClusterSimulator sim(c, b, {32}, 20);
  DynamixPolicy policy(shipped());
  ClusterState s = sim.reset(&policy);
  bool held_follow = false;  // the case of this test: a follow plan held through its spell
  int64_t uneven_after = 0;  // steps at an uneven plan from the held spell's end to the next spell
  std::string shown;
  while (s.global.step < 469) {
    const int64_t step = s.global.step;
    const BatchPlan p = policy.decide(s);
    const auto [lo, hi] = std::minmax_element(p.batch_sizes.begin(), p.batch_sizes.end());
    shown += " " + std::to_string(step) + ":[" + std::to_string(p.batch_sizes[0]) + "," +
             std::to_string(p.batch_sizes[1]) + "," + std::to_string(p.batch_sizes[2]) + "," +
             std::to_string(p.batch_sizes[3]) + "]";
    if (step >= 332 && step < 350 && p.note.find("expected to end") != std::string::npos && *hi - *lo > 8)
      held_follow = true;
    s = sim.step_window(p, &policy);
    if (held_follow && step >= 340 && step < 397 && *hi - *lo > 1) uneven_after += s.global.step - step;
  }
  ASSERT_TRUE(held_follow) << shown;
  EXPECT_LE(uneven_after, 5) << shown;
}

// Wandering ranks (up to 1.2x), and at step 605, while the models track the last window, rank 1
// slows 4x for good. The alarm's decision four steps later moves rank 1 at once (to 8; its share
// under the fixed cost is about 3, reached over the next decisions): a confirmed change lifts the
// limit where it happened whether or not speeds drift (v2.13, docs/AGENT.md item 15). Up to
// v2.12 the limit stayed under tracking, and rank 1 went only to 16 of 32. (Wandering up to 1.1x
// tracked here until v2.17's least gain kept the plan through it: rank 1 then went to 8-10 at
// each of 24 wandering seeds and change steps, tracking or not. Wandering seed 5 stopped tracking
// here when the models' fixed cost needed a significant slope too (2026-11-29); over 68 pairs of
// seeds, tracking or not, rank 1 then went to 8-12. Wandering seed 3 stopped tracking here, and 5
// tracks again, since the models weigh windows by their steps (2026-12-07): over 66 pairs of seeds,
// 30 of them tracking, rank 1 went to 8-11 at step 609.)
TEST(ShippedPolicy, AChangeWhileSpeedsWanderIsAbsorbedInOneDecision) {
  const int64_t at = 605;
  SimConfig c = nodes_at(std::vector<double>(4, 1.0), 13, 0.05);
  add_wandering(c, 5, 1.2);
  c.events.push_back({at, {1}, 4.0, 0, 0});
  ClusterSimulator sim(c, bounds(128), {32}, 20);
  DynamixPolicy policy(shipped());
  RankTimeModels::Options o;
  o.score_persistence = true;
  RankTimeModels watch(o);  // whether the windows before make persistence the better forecast
  ClusterState s = sim.reset(&policy);
  while (s.global.step < at) {
    s = sim.step_window(policy.decide(s), &policy);
    watch.observe(s);
  }
  EXPECT_TRUE(watch.tracking());  // the case this test is about
  BatchPlan p = policy.decide(s);
  if (s.global.step == at) {  // a tracking decision on the last steps before the change
    s = sim.step_window(p, &policy);
    p = policy.decide(s);
  }
  EXPECT_LE(s.global.step, at + 4);
  EXPECT_LE(p.batch_sizes[1], 12) << "step " << s.global.step << ": rank 1 at " << p.batch_sizes[1] << " "
                                  << p.note;
}

// The same noisy cluster with one rank 1.25x slower is not held as homogeneous: that rank ends
// near its balanced share, 256 * 0.8 / 7.8 = 26.3 of 32 (at 24 the others' 33.1 samples make the
// step 1 % longer than balanced, under the 4 % a move must gain since v2.17).
TEST(ShippedPolicy, ANoisyClusterWithOneSlowerRankStillBalances) {
  std::vector<double> speeds(8, 1.0);
  speeds[5] = 0.8;
  ClusterSimulator sim(nodes_at(speeds, 9, 0.2), bounds(256), {32}, 20);
  DynamixPolicy policy(shipped());
  ClusterState s = sim.reset();
  BatchPlan p;
  for (int w = 0; w < 40; ++w) {
    p = policy.decide(s);
    s = sim.step_window(p);
  }
  EXPECT_GE(p.batch_sizes[5], 24);
  EXPECT_LE(p.batch_sizes[5], 28);
}

// The shipped policy's decisions over `windows` windows of `sim` from its start: the state after.
ClusterState after_shipped_windows(ClusterSimulator& sim, int windows) {
  DynamixPolicy policy(shipped());
  ClusterState s = sim.reset();
  for (int w = 0; w < windows; ++w) s = sim.step_window(policy.decide(s));
  return s;
}

// The mean batch of ranks [first, last) in the plan in force.
double mean_batch(const ClusterState& s, size_t first, size_t last) {
  double sum = 0;
  for (size_t i = first; i < last; ++i) sum += s.nodes[i].batch_size;
  return sum / double(last - first);
}

// Throughput of the plan in force over the last window, as a fraction of the balanced plan's.
double balanced_share(const ClusterSimulator& sim, const ClusterState& s, int32_t global) {
  const double step = s.nodes[0].compute_s + s.nodes[0].wait_s + s.nodes[0].comm_s;
  return global / step / sim.balanced_throughput(global);
}

// 4 fast ranks among 60 at 0.17x (a random 363-rank cluster of this shape ran at 1.034x gns):
// the balanced plan gives the fast ranks 144 of 32, reached in four windows of the per-window
// limit (48, 72, 108, 144), each of which alone takes only about 3 % off the slow ranks' step.
// Judged step by step, every one of them fell under the 4 % a move must gain, and the plan stayed
// at 32 everywhere; judged by the plan it leads to (23 % off the slowest rank's step), the move is
// taken (docs/AGENT.md item 22).
TEST(ShippedPolicy, ALargeImbalanceIsClosedOverSeveralLimitedWindows) {
  std::vector<double> speeds(64, 0.17);
  std::fill(speeds.begin(), speeds.begin() + 4, 1.0);
  const int32_t global = 64 * 32;
  ClusterSimulator sim(nodes_at(speeds, 41, 0.02), bounds(global), {32}, 20);
  const ClusterState s = after_shipped_windows(sim, 8);
  std::cout << "fast rank at " << s.nodes[0].batch_size << ", " << balanced_share(sim, s, global)
            << " of the balanced throughput\n";
  EXPECT_GE(balanced_share(sim, s, global), 0.95);
  EXPECT_GE(s.nodes[0].batch_size, 130);
}

// Two halves of a 32-rank cluster 5 % apart, steady speeds, 10 % step noise: balancing takes
// 2.5 % off the step. The 4 % floor a move must gain (min_move_gain) held the uniform plan for the
// whole run; where the models forecast every window within the ranks' noise, the floor is three
// times their error beyond that noise, a fraction of a percent here, and the plan is balanced. Where
// ranks wander from window to window the floor stays (EqualRanksWhoseSpeedsWanderAreNotChased;
// docs/AGENT.md item 22).
TEST(ShippedPolicy, ASmallLastingImbalanceIsBalancedWhereSpeedsHoldStill) {
  std::vector<double> speeds(32, 1.0);
  std::fill(speeds.begin() + 16, speeds.end(), 0.95);
  const int32_t global = 32 * 32;
  ClusterSimulator sim(nodes_at(speeds, 43, 0.1), bounds(global), {32}, 20);
  DynamixPolicy policy(shipped());
  ClusterState s = sim.reset();
  std::string note;
  for (int w = 0; w < 50; ++w) {
    const BatchPlan p = policy.decide(s);
    if (!p.note.empty()) note = p.note;
    s = sim.step_window(p);
  }
  // The balanced share of a slow rank is 32 * 0.95 / 0.975 = 31.2.
  EXPECT_LE(mean_batch(s, 16, 32), 31.5) << note;
}

// Two large classes 8 % apart under 25 % step noise: each rank's level lies within the bar of
// the cluster's median, so the homogeneous hold kept the even split (a random 197-rank cluster of
// this shape held it for 1440 of 1559 steps, 1.017x gns's time). Their spread about the mean is
// far past what noise gives, and the plan is balanced (docs/AGENT.md item 23).
TEST(ShippedPolicy, TwoLargeClassesCloseInSpeedAreBalancedUnderHeavyNoise) {
  std::vector<double> speeds(96, 0.92);
  std::fill(speeds.begin(), speeds.begin() + 32, 1.0);
  const int32_t global = 96 * 32;
  ClusterSimulator sim(nodes_at(speeds, 47, 0.25), bounds(global), {32}, 20);
  // The balanced share of a fast rank is 32 / 0.9467 = 33.8.
  EXPECT_GE(mean_batch(after_shipped_windows(sim, 30), 0, 32), 33.0);
}

// Equal speeds, but 8 of 64 ranks scatter their steps 2.5x more (20 % against 8 %): the slowest
// step is mostly one of theirs, and the split gives them less (agent/noise_split.h). Judged by the
// slowest mean, that move loses (the others' means rise), and the plan stayed even until step 460
// here; a random 142-rank cluster of this shape ran at static's time for its whole run, where the
// noise-weighed split takes 7 % off it. A move is now judged by the expected slowest step under
// the noise the split weighed (docs/AGENT.md item 23).
TEST(ShippedPolicy, RanksThatScatterMoreCarryLessWhereTheirMeansAgree) {
  SimConfig c = nodes_at(std::vector<double>(64, 1.0), 53);
  c.noise.assign(64, 0.08);
  std::fill(c.noise.begin(), c.noise.begin() + 8, 0.2);
  const int32_t global = 64 * 32;
  ClusterSimulator sim(c, bounds(global), {32}, 20);
  EXPECT_LE(mean_batch(after_shipped_windows(sim, 15), 0, 8), 29.0);
}

TEST(ShippedPolicy, ReachesTheBalancedPlanWithinAFewWindowsFromAnyStart) {
  std::mt19937_64 rng(21);
  std::uniform_int_distribution<int32_t> start(16, 256);
  for (int trial = 0; trial < 12; ++trial) {
    const bool large = trial % 3 == 2;
    std::vector<double> speeds;
    for (int i = 0; i < (large ? 32 : 4); ++i)
      speeds.push_back(std::pow(16.0, -std::uniform_real_distribution<double>(0, 1)(rng)));
    std::vector<int32_t> init;
    for (size_t i = 0; i < speeds.size(); ++i) init.push_back(start(rng));
    const int32_t global = std::accumulate(init.begin(), init.end(), 0);
    BatchBounds b = bounds(global);
    b.max = {4096};
    ClusterSimulator sim(nodes_at(speeds, 30 + trial, 0.0), b, init, 10);
    DynamixPolicy policy(shipped());
    ClusterState s = sim.reset();
    for (int w = 0; w < kWindowsToBalance; ++w) s = sim.step_window(policy.decide(s));
    EXPECT_GE(balanced_share(sim, s, global), 0.95)
        << "trial " << trial << " (" << speeds.size() << " ranks)";
  }
}

// Rank 1 of four slows 4x late in a window, as in configs/fashion_mnist_dynamic.yaml: 10 steps
// before, 4 after (the window's mean 1.86x, its last quarter 4x). When the change alarm asked
// for the decision, the shipped policy moves rank 1 to its balanced share (about 11 of 128) at
// once, past the per-window limit (max_change 0.5 stops at 16); a regular window decision on the
// same readings keeps the limit.
TEST(ShippedPolicy, AChangeTheAlarmReportsIsAbsorbedInOneDecision) {
  auto decide_after_slowdown = [](bool alarm) {
    DynamixPolicy policy(shipped());
    ClusterState s;
    s.bounds = bounds(128);
    s.bounds.max.assign(4, 256);
    s.nodes.resize(4);
    for (auto& r : s.nodes) {
      r.batch_size = 32;
      r.compute_s = r.compute_recent_s = 0.032;
      r.compute_rel_se = 0.02;
    }
    for (int w = 0; w < 4; ++w) {
      s.window = w;
      EXPECT_EQ(policy.decide(s).batch_sizes, (std::vector<int32_t>(4, 32))) << "window " << w;
    }
    for (int step = 0; step < 3 && alarm; ++step) policy.wants_decision({0.032, 0.128, 0.032, 0.032});
    s.window = 4;
    s.nodes[1].compute_s = (10 * 0.032 + 4 * 0.128) / 14;
    s.nodes[1].compute_recent_s = 0.128;
    return policy.decide(s).batch_sizes;
  };
  const std::vector<int32_t> asked = decide_after_slowdown(true);
  EXPECT_LE(asked[1], 12) << "plan [" << asked[0] << "," << asked[1] << "," << asked[2] << "," << asked[3]
                          << "]";
  EXPECT_EQ(decide_after_slowdown(false)[1], 16);
}

// A change the alarm sees one or two steps before a regular decision is answered by that
// decision: asking would decide on the alarm and again, one or two steps later, on the window's
// rest (a real run decided at steps 39 and 40). Rank 1 of 4 slows 4x at every offset of the window
// from step 200: no window after it is shorter than TrackingCadence's 3 steps, and the plan has
// moved batch off rank 1 within 23 steps of the change wherever it starts.
TEST(ShippedPolicy, AChangeSeenJustBeforeARegularDecisionIsAnsweredByIt) {
  for (int64_t offset = 0; offset < 20; ++offset) {
    SimConfig c = nodes_at(std::vector<double>(4, 1.0), 11, 0.02);
    c.events.push_back({200 + offset, {1}, 4.0, 0, 0});
    ClusterSimulator sim(c, bounds(128), {32}, 20);
    DynamixPolicy policy(shipped());
    ClusterState s = sim.reset(&policy);
    int64_t last = s.global.step, moved_at = -1;
    while (s.global.step < 300) {
      const BatchPlan p = policy.decide(s);
      if (moved_at < 0 && s.global.step > 200 + offset && p.batch_sizes[1] <= 16) moved_at = s.global.step;
      s = sim.step_window(p, &policy);
      if (last >= 180)
        EXPECT_GE(s.global.step - last, 3) << "slowdown at " << 200 + offset << ", decision at " << last;
      last = s.global.step;
    }
    EXPECT_GT(moved_at, 0) << "slowdown at " << 200 + offset;
    EXPECT_LE(moved_at, 200 + offset + 23) << "slowdown at " << 200 + offset;
  }
}

// The limit is lifted where the change happened, not everywhere. Rank 2's history reads as a large
// fixed cost (its time barely grew while its batch went 24 -> 48, as when a drifting speed and the
// batch that follows it move together), so its balanced share is far above its 48. When rank 1
// slows 4x and the alarm asks, rank 1 moves at once, while rank 2 still moves by at most half,
// around the common factor that keeps the global batch (a random 228-rank scenario lost 3.6 % to
// gns when every rank's limit was lifted). Plan here: [25, 6, 89, 24].
TEST(ShippedPolicy, AChangeLiftsTheLimitOnlyWhereItHappened) {
  DynamixPolicy policy(shipped());
  ClusterState s;
  s.bounds = bounds(144);
  s.bounds.max.assign(4, 256);
  s.nodes.resize(4);
  const int32_t rank2_batch[] = {24, 36, 42, 48};  // the others share the rest of 144 evenly
  for (int w = 0; w < 4; ++w) {
    s.window = w;
    for (size_t i = 0; i < 4; ++i) {
      NodeRecord& r = s.nodes[i];
      r.batch_size = i == 2 ? rank2_batch[w] : (144 - rank2_batch[w]) / 3;
      // rank 2: 18 ms fixed and 20 us per sample (900 samples' worth fixed); the others 1 ms per sample
      r.compute_s = r.compute_recent_s = i == 2 ? 0.018 + 0.00002 * r.batch_size : 0.001 * r.batch_size;
      r.compute_rel_se = 0.02;
    }
    policy.decide(s);
  }
  for (int step = 0; step < 3; ++step) policy.wants_decision({0.032, 0.128, 0.019, 0.032});
  s.window = 4;
  s.nodes[1].compute_s = (10 * 0.032 + 4 * 0.128) / 14;
  s.nodes[1].compute_recent_s = 0.128;
  const std::vector<int32_t> plan = policy.decide(s).batch_sizes;
  const std::string shown = "[" + std::to_string(plan[0]) + "," + std::to_string(plan[1]) + "," +
                            std::to_string(plan[2]) + "," + std::to_string(plan[3]) + "]";
  EXPECT_LE(plan[1], 12) << shown;
  // The common factor is (144 - rank 1's new share of 5-6) / (32 + 48 + 32), about 1.24, so rank 2
  // may go to 48 · 1.24 · 1.5 = 89; with every rank's limit lifted it went to 99.
  EXPECT_LE(plan[2], 90) << shown;
  EXPECT_GT(plan[2], 72) << shown;  // more than half again: the common factor moved its band
}

// A plan change costs time on real devices (the first step at a new batch runs slower): on the
// README demo's cluster with noisy, wandering ranks, where small moves chase noise, the policy
// measures that cost (SwitchCost) and keeps its plan unless a move's forecast gain over the window
// pays for it. Same cluster without the cost: it measures none and moves as before. (SwitchCost's
// bar alone: min_move_gain 0; with v2.17's default 4 % floor both runs keep most moves.)
struct SwitchRun {
  int changes = 0, kept = 0;
  double ideal_fraction = 0;
};
SwitchRun run_with_switch_cost(double switch_cost) {
  SimConfig c = nodes_at({1.0, 1.0, 1 / 1.5, 1 / 2.5}, 17, 0.15);
  c.workload.switch_cost = switch_cost;
  add_wandering(c, 3, 1.15);
  ClusterSimulator sim(c, bounds(128), {32}, 20);
  DynamixOptions options = shipped();
  options.min_move_gain = 0;  // SwitchCost's bar alone
  DynamixPolicy policy(options);
  ClusterState s = sim.reset(&policy);
  SwitchRun run;
  std::vector<int32_t> last(4, 32);
  while (s.global.step < 2000) {
    const BatchPlan p = policy.decide(s);
    run.changes += p.batch_sizes != last;
    run.kept += p.note.find("a plan change costs") != std::string::npos;
    last = p.batch_sizes;
    s = sim.step_window(p, &policy);
  }
  run.ideal_fraction = sim.totals().ideal_fraction();
  return run;
}

TEST(ShippedPolicy, MovesThatDoNotPayForAPlanChangeAreNotTaken) {
  const SwitchRun free = run_with_switch_cost(0), costly = run_with_switch_cost(1.0);
  std::cout << "switch cost 0: " << free.changes << " plan changes, " << free.kept
            << " moves kept back, ideal " << free.ideal_fraction << "; switch cost 1 step: " << costly.changes
            << " changes, " << costly.kept << " kept back, ideal " << costly.ideal_fraction << "\n";
  EXPECT_GT(costly.kept, 0);
  EXPECT_LT(2 * costly.changes, free.changes);
  EXPECT_GT(costly.ideal_fraction, 0.95);  // still balanced (0.988)
}

// Decisions the shipped policy takes over 1200 simulated steps of `c` (regular window 20), and
// how many of those in the second half came on windows of at most 6 steps.
struct Cadence {
  int decisions = 0, short_windows = 0;
};
Cadence decisions_over(const SimConfig& c) {
  ClusterSimulator sim(c, bounds(256), {32}, 20);
  DynamixPolicy policy(shipped());
  ClusterState s = sim.reset(&policy);
  Cadence seen;
  for (int64_t step = s.global.step; step < 1200; step = s.global.step) {
    s = sim.step_window(policy.decide(s), &policy);
    ++seen.decisions;
    if (step >= 600 && s.nodes[0].steps <= 6) ++seen.short_windows;
  }
  return seen;
}

// Drifting speeds (8 ranks in 4 groups, each moving between 1x and 4x slower every 300 steps, a
// quarter period apart, as configs/agent_suite/dynamic_drift.yaml): the models find that the last
// window predicts the next better than their history, and the policy then decides every quarter
// of its 20-step window (TrackingCadence). Steady heterogeneous speeds keep the regular window.
TEST(ShippedPolicy, DriftingSpeedsBringDecisionsForward) {
  SimConfig drift = nodes_at(std::vector<double>(8, 1.0), 7);
  for (int g = 0; g < 4; ++g) drift.events.push_back({75 * g, {g, g + 4}, 4.0, 0, 300});
  const Cadence drifting = decisions_over(drift);
  const Cadence steady = decisions_over(nodes_at({1.0, 0.8, 0.5, 0.5, 0.3, 1.0, 0.25, 0.7}, 7));
  std::cout << "decisions in 1200 steps: drifting " << drifting.decisions << " (" << drifting.short_windows
            << " on <= 6 steps in the second half), steady " << steady.decisions << " ("
            << steady.short_windows << ")\n";
  EXPECT_GE(drifting.short_windows, 40);
  EXPECT_EQ(steady.short_windows, 0);
}

// Throughput over ideal throughput from step `from` to step `to` of a fresh run.
double ideal_fraction_between(ClusterSimulator& sim, BatchPolicy& policy, int64_t from, int64_t to) {
  ClusterState s = sim.reset(&policy);
  while (s.global.step < from) s = sim.step_window(policy.decide(s), &policy);
  const SimTotals before = sim.totals();
  while (s.global.step < to) s = sim.step_window(policy.decide(s), &policy);
  const SimTotals after = sim.totals();
  return (after.ideal_time_s - before.ideal_time_s) / (after.sim_time_s - before.sim_time_s);
}

// The same drift, followed: while speeds drift, a rank's batch and its speed move together, and
// the affine fit of its history reads the slowdown as a fixed cost (alpha/beta of 0 to 30000
// samples where the truth is 10). The balanced split of those models sent ranks to their bounds
// and the policy ran at 0.85 of the noiseless ideal throughput on the suite's drift scenario; under
// tracking the forecast is each rank's rate at its batch in force (docs/AGENT.md, item 14). Here it
// runs at 0.968 of the balanced plan under the same noise.
TEST(ShippedPolicy, DriftingSpeedsAreFollowedNotReadAsFixedCost) {
  SimConfig drift = nodes_at(std::vector<double>(8, 1.0), 7);
  for (int g = 0; g < 4; ++g) drift.events.push_back({75 * g, {g, g + 4}, 4.0, 0, 300});
  ClusterSimulator sim(drift, bounds(256), {32}, 20);
  DynamixPolicy policy(shipped());
  const double fraction = ideal_fraction_between(sim, policy, 300, 2100);
  std::cout << "drifting speeds, steps 300-2100: " << fraction << " of the ideal throughput\n";
  EXPECT_GE(fraction, 0.95);
}

// Slowdowns under the restart threshold (from a held-out random cluster, 2026-12-06): 2 of 8 ranks
// 1.6x slower for 180 of every 260 steps, one rank 2x slower throughout and one 1.1x, window 20, 20 %
// step noise. The linear rule restarts a model at a 50 % miss and the change alarm asks at 2x, so
// each phase change reached the models only by the forgetting, a fifth per window, and the plan
// lagged each change by 40-60 steps: 0.973-0.977 of the balanced plan under the same noise over
// seeds 1-4 with `level_shifts` off. A clear shift restarting the model (RankTimeModels::Options::
// level_shifts) follows each phase within a window or two: 0.983-0.984.
TEST(ShippedPolicy, ASlowdownUnderTheRestartThresholdIsFollowed) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SimConfig c = nodes_at({1, 1, 1, 1, 1, 0.5, 1, 0.9}, seed, 0.2);
    for (int64_t t = 200; t < 2000; t += 260) c.events.push_back({t, {0, 2}, 1.6, 180, 0});
    ClusterSimulator sim(c, bounds(512), {32}, 20);
    DynamixPolicy policy(shipped());
    const double fraction = ideal_fraction_between(sim, policy, 200, 2000);
    std::cout << "2 of 8 ranks 1.6x slower for 180 of every 260 steps, seed " << seed << ": " << fraction
              << " of the ideal throughput\n";
    EXPECT_GE(fraction, 0.979) << "seed " << seed;
  }
}

// The held-out random clusters' shape (scripts/experiments/random_suite.py): each rank's fixed cost
// `alpha` and per-sample cost `beta` divided by its speed, no gradient traffic, batches from 2 up
// to `global` samples, windows of 5 steps. The shipped policy's throughput over the ideal from
// step `from` to `to`.
double knee_ranks_fraction(SimConfig c, const std::vector<double>& speeds, double alpha, double beta,
                           int32_t global, int64_t from, int64_t to) {
  c.workload.grad_bytes = 0;
  for (size_t i = 0; i < speeds.size(); ++i) c.alpha_s[i] = alpha / speeds[i], c.beta_s[i] = beta / speeds[i];
  BatchBounds b = bounds(global);
  b.min = 2;
  ClusterSimulator sim(c, b, {32}, 5);
  DynamixPolicy policy(shipped());
  return ideal_fraction_between(sim, policy, from, to);
}

// Ranks that drift far apart, slowly (from a held-out random cluster, 2026-12-06): 3 ranks at
// speeds 1, 0.37 and 0.99, rank 0 drifting to 6x slower and back every 623 steps, rank 2 to 3.6x
// and 1.7x over two cycles, 24 % step noise, windows of 5 steps. Under tracking the homogeneous
// hold judged the last windows' levels against persistence's forecast error (14 % a window here),
// and ranks 2-3x apart passed for equal ranks and were held: 0.958-0.963 of the balanced plan under
// the same noise over seeds 1-4 (mean 0.959). Their levels fitted over their histories must be
// equal within the step noise and 1.2x too (docs/AGENT.md item 30): 0.965-0.971 (mean 0.968).
TEST(ShippedPolicy, RanksDriftingApartAreNotHeldAsEqual) {
  double sum = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const std::vector<double> speeds = {1.0, 0.368, 0.988};
    SimConfig c = nodes_at(speeds, seed, 0.244);
    c.events = {{871, {0}, 5.95, 0, 623}, {485, {2}, 3.62, 0, 429}, {952, {2}, 1.66, 0, 566}};
    const double fraction = knee_ranks_fraction(c, speeds, 0.0083, 0.00046, 96, 500, 3000);
    std::cout << "3 ranks drifting apart, seed " << seed << ": " << fraction << " of the ideal throughput\n";
    EXPECT_GE(fraction, 0.962) << "seed " << seed;
    sum += fraction;
  }
  EXPECT_GE(sum / 4, 0.965);
}

// Random suite 32's static_r013: 7 ranks, 2 of them 15 % slower and 2 4 % slower, at 30 % step
// noise (the 2 at 4 %: 10 %) with 5-step windows. The models forget (about five windows), and by
// them the ranks passed the homogeneous hold's tests as equal: the even split was held for the whole
// run, 1.015x gns's time, 0.976-0.984 of the balanced plan under the same noise here. Every window
// since the ranks last changed tells them apart (agent/steady_levels.h, docs/AGENT.md item 34):
// 1.003-1.011 (the noise-aware split passes the balanced plan's throughput).
TEST(ShippedPolicy, RanksALittleApartUnderHeavyNoiseAreNotHeldAsEqual) {
  double sum = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const std::vector<double> speeds = {1, 1, 1, 0.849, 0.849, 0.957, 0.957};
    SimConfig c = nodes_at(speeds, seed, 0.3);
    c.noise = {0.3, 0.3, 0.3, 0.3, 0.3, 0.097, 0.097};
    const double fraction = knee_ranks_fraction(c, speeds, 0.00196, 0.000953, 224, 200, 2000);
    std::cout << "7 ranks a little apart, seed " << seed << ": " << fraction << " of the ideal throughput\n";
    EXPECT_GE(fraction, 0.995) << "seed " << seed;
    sum += fraction;
  }
  EXPECT_GE(sum / 4, 1.0);
}

// Four equal ranks, two to a core as on the 2-core VM, where a core's time grows faster than its
// work (caches): both ranks of a core finish their joint work W = b_i + b_mate in c·W·(1 + W/64),
// so a rank reads 1.55c a sample at [17, 18], 2c at [32, 32] and 2.45c at [47, 46]. On the VM, right
// after a followed spell, ranks at 16-17 read 0.55-0.75 ms a sample and ranks at 47-48 0.80-0.87
// (0.80 at 32). Steps jittered by 3 %, driven step by step as the trainer drives the policy (a
// decision every 20 steps and wherever the policy asks). Ranks 2 and 3 run 3x slow for steps
// 101-106, 201-206 and 301-306, and 12 % fast for the 3 steps after each, as the VM's ranks did
// after a spell (10-15 %). The first two spells come before ShortSpells knows kMinSpells ended
// ones, so they are followed; the models that fitted the followed plan read the ranks it shrank as
// faster per sample and those it grew as slower, and the split of their return was [30, 30, 34, 34]
// here and [30, 29, 35, 34] on the real spells cell, kept by the move floor for 80 steps
// (docs/AGENT.md item 37). The third is held, and its return is judged on its 3 fast steps (here a
// move under the floor; on the real cell [30, 31, 33, 34]). Now a spell that SpellWatch saw end,
// the ranks it slowed in no spell now, leaves the plan it found: both returns restore the even
// split, the held spell's end keeps it, no plan gives ranks 2 and 3 more than 32 samples, and the
// run ends on the even split.
TEST(ShippedPolicy, APlanThatFollowedASpellReturnsToThePlanBeforeIt) {
  const std::vector<int32_t> even(4, 32);
  DynamixPolicy policy(shipped());
  std::mt19937_64 rng(7);
  std::normal_distribution<double> jitter(0, 0.03);
  std::vector<int32_t> plan = even;
  std::vector<std::vector<double>> window;  // the steps since the last decision, per step per rank
  int64_t window_index = 0, followed_at = -1, restored_at = -1;
  int32_t most_on_slowed = 0;
  std::string restore_note;
  std::vector<int64_t> held_returns;  // decisions that kept the plan at a held spell's end
  for (int64_t step = 1; step <= 400; ++step) {
    const int64_t in_century = (step - 1) % 100 + 1;  // spells at 101-106, 201-206, 301-306
    const bool spell = step > 100 && in_century <= 6, after = step > 100 && in_century > 6 && in_century <= 9;
    std::vector<double> t(4);
    for (size_t i = 0; i < 4; ++i) {
      const double work = plan[i] + plan[i ^ 1];  // ranks 0 and 1 share a core, 2 and 3 the other
      const double slow = i < 2 ? 1.0 : spell ? 3.0 : after ? 0.88 : 1.0;
      t[i] = 0.0004 * work * (1 + work / 64) * slow * std::exp(jitter(rng));
    }
    window.push_back(t);
    const bool asked = policy.wants_decision(t);
    if (!asked && step % 20 != 0) continue;
    ClusterState s;
    s.window = window_index++;
    s.global.step = step;
    s.bounds = bounds(128);
    const int64_t k = int64_t(window.size()), recent = recent_steps(k);
    for (size_t i = 0; i < 4; ++i) {
      NodeRecord r;
      r.rank = int32_t(i);
      r.batch_size = plan[i];
      r.batch_max = 256;
      r.steps = int32_t(k);
      double sum = 0, sq = 0, tail = 0;
      for (int64_t j = 0; j < k; ++j) {
        const double x = window[size_t(j)][i];
        sum += x, sq += x * x;
        if (j >= k - recent) tail += x;
      }
      r.compute_s = sum / double(k);
      r.compute_rel_se = relative_standard_error(sum, sq, double(k));
      r.compute_recent_s = tail / double(recent);
      s.nodes.push_back(r);
    }
    window.clear();
    const BatchPlan p = policy.decide(s);
    if (p.batch_sizes != plan && step < 200) {
      if (followed_at < 0) {
        followed_at = step;
      } else if (restored_at < 0) {
        restored_at = step;
        restore_note = p.note;
        EXPECT_EQ(p.batch_sizes, even) << "step " << step << ": " << p.note;
      }
    }
    if (p.note.find("the spell held through is over") != std::string::npos) held_returns.push_back(step);
    plan = p.batch_sizes;
    most_on_slowed = std::max({most_on_slowed, plan[2], plan[3]});
  }
  std::cout << "first spell followed at step " << followed_at << ", left at step " << restored_at << ": "
            << restore_note << "; most samples on ranks 2-3 " << most_on_slowed
            << "; held spells' ends at steps";
  for (int64_t step : held_returns) std::cout << " " << step;
  std::cout << "\n";
  EXPECT_GT(followed_at, 100);
  EXPECT_LE(followed_at, 110);
  EXPECT_GT(restored_at, 106);
  EXPECT_LE(restored_at, 115);
  EXPECT_NE(restore_note.find("the spell it followed is over"), std::string::npos) << restore_note;
  EXPECT_LE(most_on_slowed, 32);
  ASSERT_EQ(held_returns.size(), 1u);
  EXPECT_GT(held_returns[0], 306);
  EXPECT_LE(held_returns[0], 315);
  EXPECT_EQ(plan, even);
}

// A spell on ranks whose step is mostly a fixed cost (configs/experiments/sim_fixed_cost_spells.yaml:
// 4 ms a step and 0.02 ms a sample, ranks 2 and 3 2x slower for 60 steps). Following it takes them to
// 8 samples, where a model through the origin reads the fixed cost as per-sample cost, so each way
// back is forecast to gain a sample's worth, under the move floor: they stayed at 8 until step 1240
// (seed 3). That forecast bounds their time from above, and they idle 20 % of the step, so growing
// them cannot slow it (docs/AGENT.md item 31): by step 1200 they are back at 18-27 samples.
TEST(ShippedPolicy, RanksFollowedDownToTheirFixedCostAreGrownBack) {
  for (uint64_t seed = 3; seed <= 5; ++seed) {
    SimConfig c = nodes_at({1, 1, 1, 1}, seed, 0.05);
    c.workload.grad_bytes = 1e6, c.workload.bandwidth_gbps = 10, c.workload.latency_us = 50;
    for (size_t i = 0; i < 4; ++i) c.alpha_s[i] = 0.004, c.beta_s[i] = 0.00002;
    c.events = {{800, {2, 3}, 2.0, 60, 0}};
    BatchBounds b = bounds(128);
    b.min = 8;
    ClusterSimulator sim(c, b, {32}, 20);
    DynamixPolicy policy(shipped());
    ClusterState s = sim.reset(&policy);
    while (s.global.step < 1200) s = sim.step_window(policy.decide(s), &policy);
    const int32_t least = std::min(s.nodes[2].batch_size, s.nodes[3].batch_size);
    std::cout << "fixed-cost ranks after a spell, seed " << seed << ": plan at step " << s.global.step << " ["
              << s.nodes[0].batch_size << ", " << s.nodes[1].batch_size << ", " << s.nodes[2].batch_size
              << ", " << s.nodes[3].batch_size << "]\n";
    EXPECT_GE(least, 16) << "seed " << seed;
  }
}

// Interference that comes back: 2 of 16 ranks 3x slower for 20 of every 40 steps (window 10).
// Following each phase, the plan was wrong for the steps each switch takes to reach a decision and
// ran at 0.87 of the noiseless ideal throughput; holding the slow phase's share through the fast
// phases (agent/recurring_slowdown.h) runs at 0.95 of it, 0.974-0.982 of the balanced plan under
// the same noise over seeds 1-8 (one seed until 2026-12-06: a hold that also took in ranks seen
// slowing with a recurring one kept seed 5 at 0.982 and lost it at 0.949, mean 0.976).
TEST(ShippedPolicy, RecurringInterferenceIsPlannedForNotChased) {
  double sum = 0, least = 1;
  const int seeds = 8;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    SimConfig c = nodes_at(std::vector<double>(16, 1.0), seed);
    for (int64_t t = 100; t < 2100; t += 40) c.events.push_back({t, {2, 9}, 3.0, 20, 0});
    BatchBounds b = bounds(512);
    b.min = 4;
    ClusterSimulator sim(c, b, {32}, 10);
    DynamixPolicy policy(shipped());
    const double fraction = ideal_fraction_between(sim, policy, 500, 2000);
    std::cout << "2 of 16 ranks 3x slower every other 20 steps, seed " << seed
              << ", steps 500-2000: " << fraction << " of the ideal throughput\n";
    sum += fraction;
    least = std::min(least, fraction);
  }
  EXPECT_GE(sum / seeds, 0.97);
  EXPECT_GE(least, 0.96);
}

// Half the ranks 3x slower for 200 of every 400 steps: holding their slow-phase share would
// overload the other half through every fast phase, so the plan follows the phases.
TEST(ShippedPolicy, LongPhasesOfManySlowRanksAreFollowed) {
  SimConfig c = nodes_at(std::vector<double>(8, 1.0), 5);
  for (int64_t t = 100; t < 2100; t += 400) c.events.push_back({t, {0, 1, 2, 3}, 3.0, 200, 0});
  ClusterSimulator sim(c, bounds(256), {32}, 20);
  DynamixPolicy policy(shipped());
  ClusterState s = sim.reset(&policy);
  int32_t lowest_in_fast_phases = 256;
  while (s.global.step < 2100) {
    const BatchPlan plan = policy.decide(s);
    // Late in a fast phase after the third slow one (steps 1200-1300, 1600-1700, 2000-2100).
    if (s.global.step >= 1200 && (s.global.step - 100) % 400 >= 300) {
      for (int r = 0; r < 4; ++r)
        lowest_in_fast_phases = std::min(lowest_in_fast_phases, plan.batch_sizes[r]);
    }
    s = sim.step_window(plan, &policy);
  }
  std::cout << "half the ranks slowed for 200 of every 400 steps: their smallest batch late in a fast phase "
            << lowest_in_fast_phases << " of 32\n";
  EXPECT_GE(lowest_in_fast_phases, 28);
}

// A pretraining small enough for a unit test: short episodes of small clusters, a small network.
PretrainOptions small_pretrain(int64_t episodes, int32_t max_nodes, const std::string& output) {
  PretrainOptions o;
  o.episodes = episodes;
  o.windows_per_episode = 8;
  o.min_nodes = 4;
  o.max_nodes = max_nodes;
  o.ppo.hidden = {16, 16};
  o.ppo.rollout_windows = 16;
  o.output = ::testing::TempDir() + output;
  return o;
}

TEST(PpoPretrain, TrainsOverRandomClustersSavesAndReloads) {
  PretrainOptions o = small_pretrain(6, 64, "dynamix_pretrain_smoke.pt");
  o.log_every = 3;
  o.validate_every = 0;  // the last weights (selection: the next test)
  std::ostringstream log;
  o.log = &log;
  ASSERT_EQ(run_pretrain(o), 0);
  EXPECT_NE(log.str().find("episode 6/6"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("gamma="), std::string::npos);  // config printed at start

  // Random episodes differ in size and kind; the saved policy serves any size.
  std::set<int32_t> sizes;
  std::set<std::string> kinds;
  int random_starts = 0;
  for (int64_t ep = 0; ep < 40; ++ep) {
    PretrainEpisode e = random_episode(o, ep);
    sizes.insert(e.config.nodes);
    kinds.insert(e.kind);
    ClusterSimulator check(e.config, e.bounds, e.initial_plan, e.window);  // a valid cluster
    if (e.initial_plan.size() == 1) continue;
    ++random_starts;  // the global batch, within each rank's bounds, not uniform
    EXPECT_EQ(std::accumulate(e.initial_plan.begin(), e.initial_plan.end(), int64_t{0}),
              e.bounds.global_batch);
    for (size_t i = 0; i < e.initial_plan.size(); ++i) {
      EXPECT_GE(e.initial_plan[i], e.bounds.min);
      EXPECT_LE(e.initial_plan[i], rank_max(e.bounds, i));
    }
    EXPECT_NE(*std::min_element(e.initial_plan.begin(), e.initial_plan.end()),
              *std::max_element(e.initial_plan.begin(), e.initial_plan.end()));
  }
  EXPECT_GE(random_starts, 4);
  EXPECT_GT(sizes.size(), 5u);
  EXPECT_GE(kinds.size(), 5u);
  DynamixPolicy loaded(DynamixOptions{PpoConfig{}, false, o.output, nullptr});
  EXPECT_GT(loaded.updates(), 0);
  for (int32_t n : {4, 48}) {
    SimConfig c = nodes_at(std::vector<double>(size_t(n), 1.0), 1);
    ClusterSimulator sim(c, bounds(32 * n), {32}, 5);
    EpisodeResult r = run_sim_episode(loaded, sim, 4);
    EXPECT_EQ(r.windows, 4);
  }
  std::remove(o.output.c_str());
  o.episodes = 0;
  EXPECT_THROW(run_pretrain(o), std::exception);
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Pretraining scores the greedy policy on fixed validation clusters before training and every
// `validate_every` episodes, and saves the best scoring weights: the file a run stopped at that
// episode (without validation) would have saved, so validating leaves training untouched.
TEST(PpoPretrain, SavesTheWeightsThatScoreBestOnTheValidationClusters) {
  PretrainOptions o = small_pretrain(20, 16, "dynamix_pretrain_validated.pt");
  o.log_every = 100;
  o.validate_every = 4;
  o.validation_episodes = 6;
  o.seed = 9;  // its best validation (episode 12) is neither the first nor the last
  // No prior and a fast learner: the greedy move changes from one validation to the next.
  o.ppo.prior_logit = 0;
  o.ppo.prior_kl_coef = 0;
  o.ppo.learning_rate = 1e-2;
  std::ostringstream log;
  o.log = &log;
  ASSERT_EQ(run_pretrain(o), 0);

  std::istringstream lines(log.str());
  std::string line;
  // The best is the last validation that says so: a snapshot must beat the best before it by a
  // margin (pretrain.cc), not by any amount.
  int64_t best_episode = -1, kept = -1;
  int scored = 0;
  while (std::getline(lines, line)) {
    long long episode = 0;
    double score = 0;
    if (std::sscanf(line.c_str(), "validation after episode %lld: throughput/ideal %lf", &episode, &score) ==
        2) {
      ++scored;
      if (line.find("(best so far)") != std::string::npos) best_episode = episode;
    }
    if (std::sscanf(line.c_str(), "keeping the weights validated after episode %lld", &episode) == 1)
      kept = episode;
  }
  std::cout << log.str();
  EXPECT_EQ(scored, 6);  // before training, then after episodes 4, 8, .., 20
  ASSERT_EQ(kept, best_episode);
  ASSERT_GT(kept, 0) << "this seed's best is the untrained policy: the test needs one in the middle";
  ASSERT_LT(kept, o.episodes) << "this seed's best is the last policy: the test needs one in the middle";

  PretrainOptions stopped = o;
  stopped.episodes = kept;
  stopped.validate_every = 0;
  stopped.output = ::testing::TempDir() + "dynamix_pretrain_stopped.pt";
  std::ostringstream quiet;
  stopped.log = &quiet;
  ASSERT_EQ(run_pretrain(stopped), 0);
  EXPECT_TRUE(file_bytes(o.output) == file_bytes(stopped.output));
  std::remove(o.output.c_str());
  std::remove(stopped.output.c_str());
  o.validate_every = -1;
  EXPECT_THROW(run_pretrain(o), Error);
}

}  // namespace
}  // namespace dynamix
