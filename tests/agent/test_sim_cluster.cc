// DYNAMIX — ClusterSimulator: determinism, formulas (compute, ring allreduce, progress), events,
// gradient norms consistent with B_noise, and policies on a 1 : 1 : 0.5 : 0.25 cluster.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "agent/baseline_factory.h"
#include "agent/noise_scale.h"
#include "agent/proportional_policy.h"
#include "agent/sim/cluster_simulator.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

BatchBounds bounds(bool fixed = true, double max_change = 0.5) {
  BatchBounds b;
  b.min = 1;
  b.max = {256};
  b.fixed_global = fixed;
  b.max_change = max_change;
  return b;
}

BatchPlan plan_of(std::vector<int32_t> b) {
  BatchPlan p;
  p.batch_sizes = std::move(b);
  return p;
}

TEST(SimClusterTest, DeterministicForASeed) {
  SimConfig c = parse_sim_config("{nodes: 64, seed: 5, profile: {random: {min_speed: 0.2, max_speed: 1}}}");
  ClusterSimulator a(c, bounds(), {32}, 20), b(c, bounds(), {32}, 20);
  ClusterState sa = a.reset(), sb = b.reset();
  for (int w = 0; w < 5; ++w) {
    std::vector<int32_t> plan(64);
    for (int i = 0; i < 64; ++i) plan[size_t(i)] = 16 + (i * 7 + w) % 33;
    sa = a.step_window(plan_of(plan));
    sb = b.step_window(plan_of(plan));
  }
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(sa.nodes[size_t(i)].compute_s, sb.nodes[size_t(i)].compute_s);
    EXPECT_EQ(sa.nodes[size_t(i)].grad_sq_norm, sb.nodes[size_t(i)].grad_sq_norm);
  }
  EXPECT_EQ(a.sim_time(), b.sim_time());
  // reset() replays the same run; another seed gives another one.
  const ClusterState first = a.reset();
  EXPECT_EQ(first.nodes[3].compute_s, b.reset().nodes[3].compute_s);
  c.seed = 6;
  ClusterSimulator other(c, bounds(), {32}, 20);
  EXPECT_NE(other.reset().nodes[3].compute_s, first.nodes[3].compute_s);
}

// Per-class noise reaches the simulated steps: the noisy class's windows scatter as configured.
TEST(SimClusterTest, ClassNoiseScattersThatClassOnly) {
  const SimConfig c = parse_sim_config(
      "{seed: 2, profile: {classes: [{count: 2, speed: 1, noise: 0.3}, {count: 2, speed: 1, noise: 0.05}]}}");
  ClusterSimulator sim(c, bounds(), {32}, 200);
  sim.reset();
  const ClusterState s = sim.step_window(plan_of({32, 32, 32, 32}));
  for (int i = 0; i < 4; ++i) {
    const NodeRecord& r = s.nodes[size_t(i)];
    const double rel_sd = r.compute_rel_se * std::sqrt(double(r.steps));
    EXPECT_NEAR(rel_sd, i < 2 ? 0.3 : 0.05, i < 2 ? 0.05 : 0.01) << i;
  }
}

TEST(SimClusterTest, NoiselessFormulas) {
  // 8 nodes, speeds 1 or 0.5; ring: 2·7/8 · 1e8 B / 1.25e9 B/s + 14 · 50 us = 0.1407 s.
  const SimConfig c = parse_sim_config(R"(
nodes: 8
profile: {classes: [{count: 4, speed: 1}, {count: 4, speed: 0.5}]}
workload: {alpha_s: 0.01, beta_s: 0.001, grad_bytes: 1e8, bandwidth_gbps: 10, latency_us: 50,
           noise: 0, b_noise: 64, b_noise_growth: 1, target_progress: 100}
)");
  ClusterSimulator sim(c, bounds(false, 0), {64}, 10);
  const ClusterState s = sim.reset();
  EXPECT_NEAR(sim.comm_time(), 0.14 + 0.0007, 1e-12);
  EXPECT_NEAR(s.nodes[0].comm_s, 0.1407, 1e-12);
  EXPECT_NEAR(s.nodes[0].compute_s, 0.01 + 0.064, 1e-12);
  EXPECT_NEAR(s.nodes[7].compute_s, 2 * (0.01 + 0.064), 1e-12);
  EXPECT_NEAR(s.nodes[0].wait_s, 0.074, 1e-12);  // waits for the slow half
  EXPECT_NEAR(s.nodes[7].wait_s, 0, 1e-12);
  EXPECT_NEAR(s.global.step_time_spread, 2, 1e-12);
  EXPECT_NEAR(sim.sim_time(), 10 * (0.148 + 0.1407), 1e-9);
  EXPECT_NEAR(s.nodes[0].samples_per_s, 64 / 0.074, 1e-6);
  // Progress: B = 512, B_noise = 64 -> 1/(1 + 1/8) per step; 100 units take ceil(112.5) = 113 steps.
  EXPECT_NEAR(s.global.progress, 10 / 1.125 / 100, 1e-12);
  while (!sim.done()) sim.step_window(plan_of(sim.plan()));
  EXPECT_EQ(sim.steps(), 113);
  EXPECT_NEAR(sim.totals().time_to_target_s, 113 * (0.148 + 0.1407), 1e-9);
  EXPECT_LT(sim.totals().mean_wait_fraction(), 0.5);
  // A single node has no allreduce.
  ClusterSimulator one(parse_sim_config("nodes: 1"), bounds(), {32}, 5);
  one.reset();
  EXPECT_EQ(one.comm_time(), 0);
}

// The ideal is the balanced plan run under the same noise draws. Without noise it is the
// balanced throughput; on a noisy homogeneous cluster the uniform plan is the balanced plan and
// scores 1 exactly; a noiseless bound would put it near 1 / E[max of 64 noise factors], ~0.68.
TEST(SimClusterTest, TheIdealIsTheBalancedPlanUnderTheSameNoise) {
  const SimConfig quiet = parse_sim_config(R"(
nodes: 4
profile: {classes: [{count: 2, speed: 1}, {count: 2, speed: 0.25}]}
workload: {noise: 0, target_progress: 1e9}
)");
  ClusterSimulator sim(quiet, bounds(), {32}, 20);
  sim.reset();
  const SimTotals t = sim.totals();
  EXPECT_NEAR(t.ideal_time_s, t.samples / sim.balanced_throughput(128), 1e-12);
  EXPECT_LT(t.ideal_fraction(), 0.6);  // uniform on a 1 : 1 : 0.25 : 0.25 cluster

  const SimConfig noisy = parse_sim_config(
      "{nodes: 64, seed: 4, workload: {noise: 0.2, bandwidth_gbps: 1000, target_progress: 1e9}}");
  ClusterSimulator uniform(noisy, bounds(), {32}, 20);
  uniform.reset();
  for (int w = 0; w < 3; ++w) uniform.step_window(plan_of(uniform.plan()));
  EXPECT_NEAR(uniform.totals().ideal_fraction(), 1, 1e-12);
  EXPECT_LT(uniform.totals().samples / uniform.balanced_throughput(64 * 32), 0.75 * uniform.sim_time());
}

// A rank whose batch a plan changes computes its first step at the new batch (1 + switch_cost)
// times as long; ranks whose batch stays, and the steps after, do not.
TEST(SimClusterTest, APlanChangeCostsTheChangedRanksTheirFirstStep) {
  const SimConfig c = parse_sim_config(R"(
nodes: 2
workload: {alpha_s: 0, beta_s: 0.001, grad_bytes: 0, latency_us: 0, noise: 0, switch_cost: 0.5,
           target_progress: 1e9}
)");
  ClusterSimulator sim(c, bounds(true, 0), {32}, 4);
  sim.reset();
  const double before = sim.sim_time();
  EXPECT_NEAR(before, 4 * 0.032, 1e-12);  // the starting plan is not a change
  ClusterState s = sim.step_window(plan_of({40, 24}));
  // Rank 0 (40) is the slowest: 1.5 x 0.040 on its first step, then 0.040.
  EXPECT_NEAR(sim.sim_time() - before, 0.060 + 3 * 0.040, 1e-12);
  EXPECT_NEAR(s.nodes[1].compute_s, (1.5 * 0.024 + 3 * 0.024) / 4, 1e-12);
  const double mid = sim.sim_time();
  s = sim.step_window(plan_of({40, 24}));  // the same plan: no cost
  EXPECT_NEAR(sim.sim_time() - mid, 4 * 0.040, 1e-12);
  const double last = sim.sim_time();
  s = sim.step_window(plan_of({41, 23}));
  EXPECT_NEAR(sim.sim_time() - last, 1.5 * 0.041 + 3 * 0.041, 1e-12);
  EXPECT_NEAR(s.nodes[1].compute_s, (1.5 * 0.023 + 3 * 0.023) / 4, 1e-12);
}

TEST(SimClusterTest, PermanentAndTransientSlowdowns) {
  const SimConfig c = parse_sim_config(R"(
nodes: 4
events: [{at_step: 20, ranks: [1], slowdown: 3}, {at_step: 50, ranks: [2], slowdown: 2, duration_steps: 5}]
workload: {noise: 0}
)");
  ClusterSimulator sim(c, bounds(), {32}, 10);
  const double base = 0.004 + 0.0004 * 32;
  ClusterState s = sim.reset();  // steps 0-9
  EXPECT_NEAR(s.nodes[1].compute_s, base, 1e-12);
  s = sim.step_window(plan_of(sim.plan()));  // 10-19
  s = sim.step_window(plan_of(sim.plan()));  // 20-29: rank 1 three times slower from now on
  EXPECT_NEAR(s.nodes[1].compute_s, 3 * base, 1e-12);
  EXPECT_NEAR(s.nodes[0].wait_s, 2 * base, 1e-12);
  s = sim.step_window(plan_of(sim.plan()));  // 30-39
  s = sim.step_window(plan_of(sim.plan()));  // 40-49
  s = sim.step_window(plan_of(sim.plan()));  // 50-59: rank 2 slowed 2x for 5 of 10 steps
  EXPECT_NEAR(s.nodes[2].compute_s, 1.5 * base, 1e-12);
  EXPECT_NEAR(s.nodes[1].compute_s, 3 * base, 1e-12);
  s = sim.step_window(plan_of(sim.plan()));
  EXPECT_NEAR(s.nodes[2].compute_s, base, 1e-12);
}

// A drift changes a rank's speed within a window; the simulator samples it often enough that a
// window's mean follows the curve, and the balanced ideal moves with it.
TEST(SimClusterTest, ADriftSlowsARankSmoothly) {
  const SimConfig c = parse_sim_config(R"(
nodes: 2
events: [{at_step: 0, ranks: [1], slowdown: 4, period_steps: 200}]
workload: {noise: 0}
)");
  ClusterSimulator sim(c, bounds(), {32}, 10);
  const double base = 0.004 + 0.0004 * 32;
  ClusterState s = sim.reset();  // steps 0-9: near 1x
  EXPECT_LT(s.nodes[1].compute_s, 1.05 * base);
  const double ideal_start = s.global.ideal_throughput;
  for (int w = 0; w < 9; ++w) s = sim.step_window(plan_of(sim.plan()));  // steps 90-99: near 4x
  EXPECT_GT(s.nodes[1].compute_s, 3.8 * base);
  EXPECT_NEAR(s.nodes[0].compute_s, base, 1e-12);
  EXPECT_LT(s.global.ideal_throughput, 0.8 * ideal_start);
  for (int w = 0; w < 10; ++w) s = sim.step_window(plan_of(sim.plan()));  // steps 190-199: back
  EXPECT_LT(s.nodes[1].compute_s, 1.05 * base);
}

// A listener that asks for a decision after step `at` (0-based, counted over the run).
class AskAt : public BatchPolicy {
 public:
  explicit AskAt(int64_t at) : at_(at) {}
  std::string name() const override { return "ask_at"; }
  BatchPlan decide(const ClusterState& s) override {
    return plan_of(std::vector<int32_t>(s.nodes.size(), 32));
  }
  bool wants_decision(const std::vector<double>& compute_s) override {
    seen_ = compute_s;
    return step_++ == at_;
  }
  std::vector<double> seen_;

 private:
  int64_t at_, step_ = 0;
};

// A request after step 13 (window 10-19) ends that window one step later, after step 14 (its
// 5 steps: 10-14); the next window runs to the regular decision at step 20. The window's last
// quarter is read from the steps actually run: rank 1 slows 3x at step 12, so the short window's
// last step (14) is all "after".
TEST(SimClusterTest, AListenerEndsTheWindowOneStepAfterItAsks) {
  const SimConfig c = parse_sim_config(R"(
nodes: 4
events: [{at_step: 12, ranks: [1], slowdown: 3}]
workload: {noise: 0}
)");
  ClusterSimulator sim(c, bounds(), {32}, 10);
  const double base = 0.004 + 0.0004 * 32;
  sim.reset();        // steps 0-9
  AskAt listener(3);  // its 4th step seen: step 13
  ClusterState s = sim.step_window(plan_of(sim.plan()), &listener);
  EXPECT_EQ(sim.steps(), 15);
  EXPECT_EQ(s.nodes[1].steps, 5);
  EXPECT_NEAR(s.nodes[1].compute_s, (2 * base + 3 * 3 * base) / 5, 1e-12);
  EXPECT_NEAR(s.nodes[1].compute_recent_s, 3 * base, 1e-12);
  ASSERT_EQ(listener.seen_.size(), 4u);
  EXPECT_NEAR(listener.seen_[1], 3 * base, 1e-12);
  s = sim.step_window(plan_of(sim.plan()), &listener);
  EXPECT_EQ(sim.steps(), 20);
  EXPECT_EQ(s.nodes[1].steps, 5);
  s = sim.step_window(plan_of(sim.plan()));
  EXPECT_EQ(sim.steps(), 30);
}

// The first window too: a listener passed to reset() may end it early (a run's first decision
// brought forward), and the next window ends on the regular grid.
TEST(SimClusterTest, AListenerCanEndTheFirstWindowEarly) {
  ClusterSimulator sim(parse_sim_config("{nodes: 4, workload: {noise: 0}}"), bounds(), {32}, 10);
  AskAt listener(3);
  ClusterState s = sim.reset(&listener);
  EXPECT_EQ(sim.steps(), 5);
  EXPECT_EQ(s.window, 0);
  EXPECT_EQ(s.nodes[0].steps, 5);
  s = sim.step_window(plan_of(sim.plan()), &listener);
  EXPECT_EQ(sim.steps(), 10);
}

TEST(SimClusterTest, RejectsInfeasiblePlans) {
  ClusterSimulator sim(parse_sim_config("nodes: 4"), bounds(), {32}, 10);
  sim.reset();
  EXPECT_THROW(sim.step_window(plan_of({32, 32, 32})), Error);
  EXPECT_THROW(sim.step_window(plan_of({0, 32, 32, 64})), Error);
  EXPECT_THROW(sim.step_window(plan_of({300, 1, 1, 1})), Error);
  EXPECT_THROW(ClusterSimulator(parse_sim_config("nodes: 4"), bounds(), {32, 32}, 10), Error);
  EXPECT_THROW(ClusterSimulator(parse_sim_config("nodes: 4"), bounds(), {512}, 10), Error);
}

TEST(SimClusterTest, GradientNormsCarryTheNoiseScale) {
  // The estimator fed the simulator's norms recovers the simulator's B_noise.
  const SimConfig c = parse_sim_config(
      "{profile: hetero4, workload: {b_noise: 300, b_noise_growth: 1, target_progress: 1e9}}");
  ClusterSimulator sim(c, bounds(), {32}, 5);
  ClusterState s = sim.reset();
  NoiseScaleEstimator est({0.98});
  const std::vector<std::vector<int32_t>> plans = {{48, 40, 24, 16}, {16, 24, 40, 48}};
  for (int w = 0; w < 400; ++w) {
    std::vector<int32_t> b;
    std::vector<double> y;
    for (const auto& r : s.nodes) b.push_back(r.batch_size), y.push_back(r.grad_sq_norm);
    est.add(b, y, s.global.global_batch, s.global.grad_sq_norm);
    s = sim.step_window(plan_of(plans[size_t(w % 2)]));
  }
  EXPECT_NEAR(s.global.noise_scale, 300, 1e-6);
  EXPECT_NEAR(est.noise_scale(), 300, 0.2 * 300);
  EXPECT_LT(s.global.loss, 2.3);
}

// Throughput over the last `measure` windows after `warmup` windows under a policy.
double measured_throughput(const std::string& policy_name, double* ideal, double deadband = 0.2) {
  const SimConfig c = parse_sim_config("{profile: hetero4, seed: 3, workload: {target_progress: 1e9}}");
  const BatchBounds b = [] {
    BatchBounds x = bounds(true, 0.5);
    x.global_batch = 128;
    return x;
  }();
  ClusterSimulator sim(c, b, {32}, 20);
  std::unique_ptr<BatchPolicy> policy = make_baseline_policy(policy_name, b, {32, 32, 32, 32});
  if (policy_name == "proportional")
    policy = std::make_unique<ProportionalPolicy>(ProportionalPolicy::Options{deadband});
  ClusterState s = sim.reset();
  for (int w = 0; w < 15; ++w) s = sim.step_window(policy->decide(s));
  const SimTotals before = sim.totals();
  for (int w = 0; w < 10; ++w) s = sim.step_window(policy->decide(s));
  const SimTotals after = sim.totals();
  *ideal = sim.balanced_throughput(128);
  return (after.samples - before.samples) / (after.sim_time_s - before.sim_time_s);
}

TEST(SimClusterTest, BalancingPoliciesReachTheLoadBalancedIdeal) {
  double ideal = 0;
  const double stat = measured_throughput("static", &ideal);
  const double prop = measured_throughput("proportional", &ideal);
  const double prop10 = measured_throughput("proportional", &ideal, 0.1);
  const double gns = measured_throughput("gns", &ideal);
  // Speeds 1:1:0.5:0.25 at B = 128: ideal T = (128·0.0004 + 4·0.004)/2.75 plus the ring's 21.7 ms.
  const double comm = 2 * 3.0 / 4 * 4.5e7 / 3.125e9 + 6 * 20e-6;
  EXPECT_NEAR(ideal, 128 / ((128 * 0.0004 + 4 * 0.004) / 2.75 + comm), 1e-6);
  RecordProperty("static_over_ideal", std::to_string(stat / ideal));
  RecordProperty("proportional_over_ideal", std::to_string(prop / ideal));
  RecordProperty("gns_over_ideal", std::to_string(gns / ideal));
  std::printf(
      "throughput / ideal: static %.3f, proportional %.3f (deadband 0.1: %.3f), gns %.3f (ideal %.1f/s)\n",
      stat / ideal, prop / ideal, prop10 / ideal, gns / ideal, ideal);
  EXPECT_LT(stat / ideal, 0.6);
  // The 20% deadband stops the controller while the slowest rank is still ~15% above the mean
  // compute time (plan 48, 48, 23, 9 against the ideal 51, 51, 21, 5): about 0.885 of the ideal.
  EXPECT_GE(prop / ideal, 0.85);
  EXPECT_GE(prop10 / ideal, 0.9);
  EXPECT_GE(gns / ideal, 0.9);
}

}  // namespace
}  // namespace dynamix
