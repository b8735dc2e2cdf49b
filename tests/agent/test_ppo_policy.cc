// DYNAMIX — DynamixPolicy: plans stay feasible for random and adversarial states; save/load.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

#include "agent/plan_projection.h"
#include "agent/ppo/dynamix_policy.h"
#include "agent/ppo/ppo_learner.h"
#include "agent/ppo/state_encoder.h"
#include "framework/core/error.h"
#include "tests/agent/policy_archive.h"

namespace dynamix {
namespace {

ClusterState random_state(std::mt19937_64& rng, int n, int64_t window) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  ClusterState s;
  s.window = window;
  s.bounds.min = 1 + static_cast<int32_t>(u(rng) * 4);
  s.bounds.max.resize(n);
  for (auto& m : s.bounds.max) m = 32 + static_cast<int32_t>(u(rng) * 200);
  s.bounds.fixed_global = u(rng) < 0.7;
  s.bounds.global_batch = n * (8 + static_cast<int32_t>(u(rng) * 24));
  s.bounds.max_change = u(rng) < 0.2 ? 0.0 : 0.5;
  s.nodes.resize(n);
  for (int i = 0; i < n; ++i) {
    NodeRecord& r = s.nodes[i];
    r.rank = i;
    r.batch_size = 1 + static_cast<int32_t>(u(rng) * 64);
    r.batch_max = s.bounds.max[i];
    r.compute_s = 0.01 + 0.1 * u(rng);
    r.wait_s = 0.05 * u(rng);
    r.comm_s = 0.02;
    r.samples_per_s = r.batch_size / r.compute_s;
    r.gpu_util = u(rng);
    r.cpu_util_machine = u(rng);
    r.gpu_mem_total_bytes = 16e9;
    r.gpu_mem_used_bytes = 16e9 * u(rng);
    r.net_tx_bytes_per_s = 1e9 * u(rng);
    r.net_srtt_us = 100 * u(rng);
  }
  s.global.progress = u(rng);
  s.global.loss = 2 * u(rng);
  s.global.loss_trend = u(rng) - 0.6;
  s.global.grad_sq_norm = u(rng);
  s.global.grad_norm_variance = u(rng);
  s.global.noise_scale = 500 * u(rng);
  s.global.step_time_spread = 1 + 3 * u(rng);
  return s;
}

// Every double of the record and the global stats set to `v` (adversarial states).
void poison(ClusterState& s, double v, std::mt19937_64& rng, bool everything) {
  for (auto& r : s.nodes) {
    double* fields[] = {&r.compute_s,
                        &r.comm_s,
                        &r.wait_s,
                        &r.data_s,
                        &r.optimizer_s,
                        &r.samples_per_s,
                        &r.grad_sq_norm,
                        &r.cpu_util_machine,
                        &r.gpu_util,
                        &r.gpu_mem_total_bytes,
                        &r.mem_available_bytes,
                        &r.net_tx_bytes_per_s,
                        &r.net_retransmits_per_s,
                        &r.net_srtt_us};
    if (everything) {
      for (double* f : fields) *f = v;
    } else {
      *fields[rng() % (sizeof(fields) / sizeof(fields[0]))] = v;
    }
  }
  if (everything) {
    s.global.loss = s.global.loss_trend = s.global.grad_norm_variance = s.global.noise_scale = v;
    s.global.step_time_spread = s.global.progress = v;
  }
}

void expect_feasible(const BatchPlan& p, const ClusterState& s, const std::string& what) {
  ASSERT_EQ(p.batch_sizes.size(), s.nodes.size()) << what;
  int64_t sum = 0, sum_lo = 0, sum_hi = 0;
  const int32_t lo = std::max(1, s.bounds.min);
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    EXPECT_GE(p.batch_sizes[i], lo) << what << " rank " << i;
    EXPECT_LE(p.batch_sizes[i], rank_max(s.bounds, i)) << what << " rank " << i;
    sum += p.batch_sizes[i];
    sum_lo += lo;
    sum_hi += rank_max(s.bounds, i);
  }
  if (s.bounds.fixed_global && s.bounds.global_batch >= sum_lo && s.bounds.global_batch <= sum_hi) {
    EXPECT_EQ(sum, s.bounds.global_batch) << what;
  }
}

PpoConfig small_config(bool background) {
  PpoConfig c;
  c.hidden = {16, 16};
  c.rollout_windows = 8;
  c.num_minibatches = 2;
  c.background_update = background;
  c.seed = 5;
  return c;
}

TEST(DynamixPolicy, PlansStayFeasibleForRandomAndAdversarialStates) {
  DynamixOptions o;
  o.ppo = small_config(/*background=*/true);
  DynamixPolicy policy(o);
  EXPECT_EQ(policy.name(), "dynamix");
  std::mt19937_64 rng(17);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const double adversarial[] = {0.0, 1e300, -1e300, nan, inf, -inf, 1e-300};
  int fallbacks = 0;
  for (int k = 0; k < 200; ++k) {
    const int n = (k / 50) % 2 ? 32 : 4;  // the cluster changes size along the way
    ClusterState s = random_state(rng, n, k);
    std::string what = "state " + std::to_string(k);
    if (k % 5 == 3) {
      double v = adversarial[(k / 5) % 7];
      poison(s, v, rng, k % 2 == 0);
      what += " poisoned with " + std::to_string(v);
    }
    if (k % 23 == 7) {  // zeros everywhere, batch sizes included
      for (auto& r : s.nodes) r = NodeRecord{};
      s.global = GlobalStats{};
      what += " all zero";
    }
    BatchPlan p = policy.decide(s);
    expect_feasible(p, s, what);
    bool non_finite = false;
    for (const auto& r : s.nodes) non_finite |= !std::isfinite(r.compute_s) || !std::isfinite(r.net_srtt_us);
    if (non_finite) {
      EXPECT_NE(p.note.find("non-finite"), std::string::npos) << what << ": " << p.note;
      ++fallbacks;
    }
  }
  EXPECT_GT(fallbacks, 0);
  policy.wait_for_updates();
  EXPECT_GT(policy.updates(), 0);  // learning went on in the background among the bad states
}

TEST(DynamixPolicy, FirstDecisionOnNaNStateFallsBackToCurrentPlan) {
  DynamixOptions o;
  o.ppo = small_config(false);
  DynamixPolicy policy(o);
  std::mt19937_64 rng(1);
  ClusterState s = random_state(rng, 4, 0);
  s.bounds.fixed_global = true;
  s.bounds.max_change = 0.5;
  s.bounds.min = 1;
  s.bounds.max.assign(4, 256);
  for (int i = 0; i < 4; ++i) s.nodes[i].batch_size = 10 * (i + 1);
  s.bounds.global_batch = 100;
  s.global.loss_trend = std::numeric_limits<double>::quiet_NaN();
  BatchPlan p = policy.decide(s);
  EXPECT_EQ(p.batch_sizes, (std::vector<int32_t>{10, 20, 30, 40}));
  EXPECT_NE(p.note.find("loss_trend"), std::string::npos) << p.note;
}

TEST(DynamixPolicy, SaveLoadRoundTripGivesIdenticalActions) {
  DynamixOptions o;
  o.ppo = small_config(false);
  DynamixPolicy trained(o);
  std::mt19937_64 rng(23);
  for (int k = 0; k < 40; ++k) trained.decide(random_state(rng, 8, k));  // several updates
  ASSERT_GT(trained.updates(), 0);
  const std::string path = ::testing::TempDir() + "dynamix_policy_roundtrip.pt";
  trained.save(path);
  trained.set_learning(false);

  DynamixOptions inference;
  inference.ppo.background_update = false;  // a run property, kept from the caller on load
  inference.learn = false;
  inference.checkpoint = path;
  DynamixPolicy loaded(inference);
  EXPECT_EQ(to_string(loaded.config()), to_string(trained.config()));
  EXPECT_EQ(loaded.node_norm().mean(), trained.node_norm().mean());
  EXPECT_EQ(loaded.updates(), trained.updates());

  DynamixPolicy from_blob(DynamixOptions{small_config(false), false, "", nullptr});
  from_blob.load_state(trained.save_state());

  for (int k = 0; k < 20; ++k) {
    ClusterState s = random_state(rng, k % 2 ? 4 : 16, k);
    BatchPlan a = trained.decide(s), b = loaded.decide(s), c = from_blob.decide(s);
    EXPECT_EQ(a.actions, b.actions);
    EXPECT_EQ(a.batch_sizes, b.batch_sizes);
    EXPECT_EQ(a.actions, c.actions);
  }
  std::remove(path.c_str());
  EXPECT_THROW(DynamixPolicy(DynamixOptions{small_config(false), false, path, nullptr}), std::exception);
}

// A policy archive with small_config's text and a network of `net_config` (tests/agent/policy_archive.h).
std::string policy_archive(const std::map<std::string, torch::Tensor>& replace, const PpoConfig& net_config,
                           const std::string& config_text = to_string(small_config(false))) {
  return testing::policy_archive(replace, net_config, config_text);
}

std::string load_error(const std::string& bytes) {
  DynamixPolicy policy(DynamixOptions{small_config(false), false, "", nullptr});
  try {
    policy.load_state(bytes);
    std::mt19937_64 rng(5);
    policy.decide(random_state(rng, 4, 0));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no error>";
}

// A policy file (or a checkpoint's policy state) is read before anything is copied out of it or
// run: a network of another layout, normalisers of the wrong length and broadcast views that claim
// any size are refused naming the entry, instead of failing at the first decision or allocating
// what the view claims.
TEST(DynamixPolicy, StoredTensorsAreCheckedOnLoad) {
  const PpoConfig same = small_config(false);
  EXPECT_EQ(load_error(policy_archive({}, same)), "<no error>");
  PpoConfig wider = same;
  wider.hidden = {32, 16};
  EXPECT_NE(load_error(policy_archive({}, wider)).find("in the network its config describes"),
            std::string::npos)
      << load_error(policy_archive({}, wider));
  EXPECT_NE(load_error(policy_archive(
                           {{"updates", torch::zeros({1}, torch::kLong).expand({int64_t{1} << 40})}}, same))
                .find("'updates' is [1099511627776] long int, expected 1 values"),
            std::string::npos);
  EXPECT_NE(
      load_error(policy_archive({{"norm.node.mean", torch::zeros({3}, torch::kDouble)}}, same))
          .find("'norm.node.mean' is [3] double, expected " + std::to_string(kNodeFeatures) + " values"),
      std::string::npos);
}

// What a policy file's values mean is checked too: counts that are not whole numbers, statistics
// that are not finite and generator states that do not parse are refused naming the entry; a
// network larger than any policy needs is refused before it is allocated.
TEST(DynamixPolicy, StoredValuesAreCheckedOnLoad) {
  const PpoConfig same = small_config(false);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto error_with = [&](const std::string& key, const torch::Tensor& t) {
    return load_error(policy_archive({{key, t}}, same));
  };
  auto contains = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  const std::string updates = error_with("updates", torch::tensor({nan}, torch::kDouble));
  EXPECT_TRUE(contains(updates, "'updates' is nan, expected a count")) << updates;
  EXPECT_TRUE(contains(error_with("updates", torch::tensor({-3}, torch::kLong)), "'updates' is -3"));
  torch::Tensor var = torch::ones({kNodeFeatures}, torch::kDouble);
  var[2] = -1.0;
  const std::string norm = error_with("norm.node.var", var);
  EXPECT_TRUE(contains(norm, "'norm.node' feature 2 has mean 0.000000 and variance -1.000000")) << norm;
  EXPECT_TRUE(contains(error_with("norm.global.count", torch::tensor({0.0}, torch::kDouble)),
                       "'norm.global.count' is 0"));

  auto config_error = [&](const std::string& line) {
    return load_error(policy_archive({}, same, to_string(same) + line + "\n"));
  };
  const std::string epochs = config_error("update_epochs=1e300");
  EXPECT_TRUE(contains(epochs, "key 'update_epochs' expects a whole number in")) << epochs;
  EXPECT_TRUE(contains(config_error("rollout_windows=2.5"), "key 'rollout_windows' expects a whole number"));
  EXPECT_TRUE(contains(config_error("norm_adv=2"), "key 'norm_adv' expects a whole number in [0, 1]"));
  const std::string wide = config_error("hidden=100000000,100000000");
  EXPECT_TRUE(contains(wide, "'hidden' must be widths in [1, 1024]")) << wide;
  EXPECT_TRUE(contains(config_error("hidden=nan"), "key 'hidden' expects a whole number"));
  EXPECT_TRUE(
      contains(config_error("seed=99999999999999999999"), "key 'seed' expects an unsigned 64-bit integer"));
  EXPECT_TRUE(contains(config_error("reward.churn=inf"), "'reward.*' must be finite"));
}

// A damaged policy file is refused naming the file and the entry before LibTorch parses it: its
// TorchScript reader trusts the module source inside and crashed on damaged source (found by
// tests/fuzz/fuzz_policy.cc; framework/core/archive_check.h).
TEST(DynamixPolicy, DamagedArchiveErrorNamesTheSource) {
  std::string bytes = policy_archive({}, small_config(false));
  const std::string code = "__buffers__ = [", damaged = "__buffers__ = K";
  const size_t at = bytes.find(code);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, code.size(), damaged);  // stored uncompressed; LibTorch checks no CRC
  DynamixPolicy policy(DynamixOptions{small_config(false), false, "", nullptr});
  try {
    policy.load_archive(bytes, "policy file damaged.pt");
    FAIL() << "a damaged archive loaded";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot read policy file damaged.pt: not an intact archive: 'archive/code/"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("': checksum mismatch"), std::string::npos) << what;
  }
}

// Two ranks at 20 samples each; the environment says what the balanced plan would do.
ClusterState two_ranks(double compute_s, double ideal) {
  ClusterState s;
  s.bounds.max.assign(2, 100);
  s.bounds.global_batch = 40;
  s.nodes.resize(2);
  for (auto& r : s.nodes) {
    r.batch_size = 20;
    r.compute_s = compute_s;
  }
  s.global.ideal_throughput = ideal;
  return s;
}

TEST(DynamixPolicy, RewardIsTheFractionOfTheBalancedIdeal) {
  DynamixOptions o;
  o.ppo = small_config(false);
  o.learn = false;
  DynamixPolicy policy(o);
  ClusterState s = two_ranks(0.1, 800);
  BatchPlan first = policy.decide(s);
  EXPECT_FALSE(first.has_reward);
  s.nodes[0].batch_size = first.batch_sizes[0];
  s.nodes[1].batch_size = first.batch_sizes[1];
  s.window = 1;
  BatchPlan second = policy.decide(s);  // 40 samples in 0.1 s against an ideal of 800/s
  ASSERT_TRUE(second.has_reward);
  const double churn = (std::abs(first.batch_sizes[0] - 20) + std::abs(first.batch_sizes[1] - 20)) / 40.0;
  EXPECT_NEAR(policy.last_reward().efficiency, 0.5, 1e-9);
  EXPECT_NEAR(second.reward, 0.5 - o.ppo.reward.churn * churn, 1e-9);

  // Real runs carry no ideal: the fitted models' balanced plan is the reference (equal ranks: 1).
  ClusterState real = two_ranks(0.1, 0);
  real.window = 2;
  policy.decide(real);
  EXPECT_NEAR(policy.last_reward().efficiency, 1.0, 1e-9);

  s.window = 0;  // a restarted run: new episode, nothing to reward yet
  EXPECT_FALSE(policy.decide(s).has_reward);
}

TEST(DynamixPolicy, AWindowWithAnOutOfMemoryRankIsPenalized) {
  DynamixOptions o;
  o.ppo = small_config(false);
  o.learn = false;
  DynamixPolicy policy(o);
  ClusterState s = two_ranks(0.1, 400);
  s.bounds.max_change = 0;
  policy.decide(s);
  s.window = 1;
  BatchPlan clean = policy.decide(s);
  ASSERT_TRUE(clean.has_reward);
  EXPECT_EQ(policy.last_reward().oom, 0.0);
  s.window = 2;
  s.nodes[1].oom_events = 1;
  BatchPlan oom = policy.decide(s);
  EXPECT_EQ(policy.last_reward().oom, 1.0);
  EXPECT_NEAR(
      oom.reward,
      policy.last_reward().efficiency - o.ppo.reward.churn * policy.last_reward().churn - o.ppo.reward.oom,
      1e-9);
  EXPECT_LT(oom.reward, clean.reward - 1.0);
}

// The change alarm asks for a decision after rank 1 ran 2.5x slow for 3 steps. Where the window
// bears the change out, by its mean or, for a rank the alarm reported, by a last quarter of 3 steps
// or more (a change late in a window of 20: docs/AGENT.md item 32), rank 1's model restarts and
// the decision moves batch away from it; where neither does (the mean and the quarter 20 % up: a
// few noisy steps; or a quarter of 2 steps, too few to read), the plan is kept, with a note,
// although a regular decision on that window would have moved it.
TEST(DynamixPolicy, AChangeAlarmActsOnlyWhereTheWindowConfirmsIt) {
  auto run = [](double window_mean, double quarter, bool alarm, int32_t steps) {
    DynamixOptions o;
    o.ppo = small_config(false);
    o.learn = false;
    DynamixPolicy policy(o);
    ClusterState s = two_ranks(0.1, 0);
    for (int w = 0; w < 3; ++w) {
      s.window = w;
      policy.decide(s);
    }
    bool asked = false;
    for (int step = 0; step < 3 && alarm; ++step) asked = policy.wants_decision({0.1, 0.25});
    EXPECT_EQ(asked, alarm);
    s.window = 3;
    s.nodes[1].compute_s = window_mean;
    s.nodes[1].compute_recent_s = quarter;
    s.nodes[1].steps = steps;
    return policy.decide(s);
  };
  EXPECT_LT(run(0.2, 0.25, true, 20).batch_sizes[1], 20);
  EXPECT_LT(run(0.12, 0.25, true, 20).batch_sizes[1], 20);
  for (const auto& [quarter, steps] : {std::pair{0.25, 8}, std::pair{0.12, 20}}) {
    const BatchPlan kept = run(0.12, quarter, true, steps);
    EXPECT_EQ(kept.batch_sizes, (std::vector<int32_t>{20, 20})) << steps;
    EXPECT_NE(kept.note.find("not borne out"), std::string::npos) << kept.note;
  }
  EXPECT_LT(run(0.12, 0.12, false, 20).batch_sizes[1], 20);
}

// Rank 1 slows 4x in the middle of window 3: the window's mean (0.25 s) mixes before and after,
// its last quarter (0.4 s) is the after. Its model restarts, and the slow proposal reads the last
// quarter: rates 20/0.1 and 20/0.4 split B = 40 as 32 + 8 (the mean alone would give 28.6 + 11.4).
// Rank 0's last quarter differs by noise only (no restart): its model is kept.
TEST(BalanceView, AChangeInsideTheWindowIsReadFromItsLastQuarter) {
  ClusterState s = two_ranks(0.1, 0);
  RankTimeModels::Options o;
  o.restart_at_recent = true;  // as DynamixPolicy's models
  RankTimeModels models(o);
  for (int w = 0; w < 3; ++w) models.observe(s);
  s.nodes[0].compute_recent_s = 0.11;
  s.nodes[1].compute_s = 0.25;
  s.nodes[1].compute_recent_s = 0.4;
  models.observe(s);
  ASSERT_TRUE(models.readings()[1].restarted);
  ASSERT_FALSE(models.readings()[0].restarted);
  const BalanceView v = balance_view(s, models, 40);
  ASSERT_TRUE(v.ready);
  EXPECT_NEAR(v.slow[0], 32, 1e-6);
  EXPECT_NEAR(v.slow[1], 8, 1e-6);
  // The fast proposal does not rescale the restarted rank 1 to the window's mean (0.25 s): its
  // model already is its last quarter, and the mean, half before the change, would pull it back
  // toward the old speed (a real run moved a 4x-slowed rank to 20 of 32 instead of 11).
  EXPECT_NEAR(v.fast[1], 8, 1e-6);
}

// Eight ranks of equal speed, their window means off by up to ±20 % of noise that changes from
// window to window: the fitted models differ by noise alone, and the slow proposal keeps the even
// split far closer than the models' own split does. A rank that really is 2x slower moves as it
// would without the shrinkage.
TEST(BalanceView, NoiseBetweenEqualRanksIsNotTakenForSpeed) {
  auto window = [](int w, double slow_rank_factor) {
    ClusterState s;
    s.bounds.max.assign(8, 256);
    s.bounds.global_batch = 256;
    s.nodes.resize(8);
    for (int i = 0; i < 8; ++i) {
      NodeRecord& r = s.nodes[size_t(i)];
      r.batch_size = 32;
      r.compute_s = 0.1 * (1 + 0.2 * std::sin(7.0 * i + 3.0 * w)) * (i == 0 ? slow_rank_factor : 1.0);
      r.compute_recent_s = r.compute_s;
      r.compute_rel_se = 0.02;
    }
    return s;
  };
  auto deviation = [](const std::vector<double>& b, double even) {
    double d = 0;
    for (double x : b) d = std::max(d, std::fabs(x - even));
    return d;
  };
  for (double factor : {1.0, 2.0}) {
    RankTimeModels models;
    ClusterState s;
    for (int w = 0; w < 4; ++w) models.observe(s = window(w, factor));
    std::vector<double> lo, hi, unshrunk;
    rank_bounds(s.bounds, 8, lo, hi);
    models.split(256, lo, hi, unshrunk);
    const BalanceView v = balance_view(s, models, 256);
    ASSERT_TRUE(v.ready);
    if (factor == 1.0) {
      EXPECT_GT(deviation(unshrunk, 32), 0.5);
      EXPECT_LT(deviation(v.slow, 32), 0.5 * deviation(unshrunk, 32));
    } else {
      EXPECT_NEAR(v.slow[0], unshrunk[0], 0.03 * unshrunk[0]);
      EXPECT_LT(v.slow[0], 20);
    }
  }
}

// A run's first window, four ranks at 32: rank 1's window mean is 1.5x faster than the others',
// every rank's mean known to 12 % (as on a real homogeneous run, ranks sharing 2 cores: one of
// them held the free core for the whole window). Rank 1's balanced share is 42.7 of 32, a move of
// log(42.7/32) = 0.29: two of its own standard errors (0.24) let it through, the bar for the
// largest of four ranks' deviations, extremes_z(4) = 2.67 standard errors (0.32), holds it. A rank
// 3x faster clears that bar, and so do the others' moves to make room.
TEST(BalanceView, TheFirstWindowMovesOnlyWhatClearsTheNoiseOfTheLargestOfTheRanks) {
  auto window = [](double rank1_compute_s) {
    ClusterState s;
    s.bounds.max.assign(4, 256);
    s.bounds.global_batch = 128;
    s.nodes.resize(4);
    for (size_t i = 0; i < 4; ++i) {
      NodeRecord& r = s.nodes[i];
      r.batch_size = 32;
      r.compute_s = r.compute_recent_s = i == 1 ? rank1_compute_s : 0.11;
      r.compute_rel_se = i == 1 ? 0.10 : 0.12;
      r.steps = 20;
    }
    return s;
  };
  RankTimeModels models;
  ClusterState s = window(0.11 / 1.5);
  models.observe(s);
  BalanceView v = balance_view(s, models, 128);
  ASSERT_TRUE(v.ready);
  for (double b : v.slow) EXPECT_EQ(b, 32);

  RankTimeModels clear;
  s = window(0.11 / 3);
  clear.observe(s);
  v = balance_view(s, clear, 128);
  EXPECT_GT(v.slow[1], 60);
  EXPECT_LT(v.slow[0], 24);
}

}  // namespace
}  // namespace dynamix
