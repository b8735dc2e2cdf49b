// DYNAMIX — decision latency of the dynamix policy (state encoding + inference + projection), and
// the per-step check every step waits for.
#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>
#include <random>

#include "agent/ppo/default_policy.h"
#include "agent/ppo/dynamix_policy.h"

namespace dynamix {
namespace {

ClusterState make_state(int n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.5, 1.5);
  ClusterState s;
  s.bounds.min = 1;
  s.bounds.max = {1024};
  s.bounds.fixed_global = true;
  s.bounds.global_batch = 32 * n;
  s.bounds.max_change = 0.5;
  s.nodes.resize(n);
  for (int i = 0; i < n; ++i) {
    NodeRecord& r = s.nodes[i];
    r.rank = i;
    r.batch_size = 32;
    r.batch_max = 1024;
    r.compute_s = 0.02 * u(rng);
    r.comm_s = 0.01;
    r.wait_s = 0.005 * u(rng);
    r.samples_per_s = r.batch_size / r.compute_s;
    r.gpu_util = 0.8;
    r.gpu_mem_total_bytes = 16e9;
    r.gpu_mem_used_bytes = 8e9;
    r.net_tx_bytes_per_s = 1e9 * u(rng);
    r.net_srtt_us = 50;
  }
  s.global.global_batch = 32 * n;
  s.global.noise_scale = 300;
  s.global.step_time_spread = 1.5;
  return s;
}

// The shipped policy, for inference or fine-tuning.
std::unique_ptr<DynamixPolicy> shipped_policy(bool learn) {
  DynamixOptions o;
  o.learn = learn;
  o.archive = default_policy_archive();
  o.archive_name = kDefaultPolicyName;
  return std::make_unique<DynamixPolicy>(o);
}

// Successive windows of one cluster: each rank's mean compute time drawn around its speed with
// its step noise over 20 steps (5 % everywhere, or a quarter of the ranks 1.5-6x noisier), so
// the models keep a history as in a run. (Passing window 0 every time would restart them.)
struct WindowStream {
  std::vector<double> seconds_per_sample;
  std::mt19937_64 rng{2};
  std::normal_distribution<double> z{0, 1};

  WindowStream(ClusterState& s, bool noisy_quarter) {
    std::uniform_real_distribution<double> u(0.075, 0.3);
    for (size_t i = 0; i < s.nodes.size(); ++i) {
      NodeRecord& r = s.nodes[i];
      seconds_per_sample.push_back(r.compute_s / r.batch_size);
      r.steps = 20;
      r.compute_rel_se = (noisy_quarter && i % 4 == 3 ? u(rng) : 0.05) / std::sqrt(20.0);
    }
  }
  void next(ClusterState& s) {
    ++s.window;
    s.global.step += 20;
    for (size_t i = 0; i < s.nodes.size(); ++i) {
      NodeRecord& r = s.nodes[i];
      r.compute_s = r.compute_recent_s =
          seconds_per_sample[i] * r.batch_size * (1 + r.compute_rel_se * z(rng));
      r.samples_per_s = r.batch_size / r.compute_s;
    }
  }
};

// The shipped policy deciding window after window; `learn` fine-tunes (PPO updates run on the
// worker) and applies its plans, inference keeps the plan of the state.
void decide_windows(benchmark::State& st, bool learn, bool noisy_quarter) {
  const int n = static_cast<int>(st.range(0));
  auto policy = shipped_policy(learn);
  std::mt19937_64 rng(1);
  ClusterState s = make_state(n, rng);
  WindowStream windows(s, noisy_quarter);
  for (auto _ : st) {
    st.PauseTiming();
    windows.next(s);
    st.ResumeTiming();
    BatchPlan p = policy->decide(s);
    if (learn)
      for (int i = 0; i < n; ++i) s.nodes[i].batch_size = p.batch_sizes[i];
    benchmark::DoNotOptimize(p);
  }
  st.SetLabel(std::to_string(n) + " ranks" +
              (learn ? ", " + std::to_string(policy->updates()) + " updates" : ""));
}

// Inference only: what a training step waits for every window.
void BM_DecideInference(benchmark::State& st) { decide_windows(st, false, false); }
BENCHMARK(BM_DecideInference)->Arg(4)->Arg(32)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);

// Inference where a quarter of the ranks scatter 1.5-6x more than the rest: after 4 windows every
// decision searches the noise-aware split (agent/noise_split.h), the worst case for latency.
void BM_DecideNoisyRanks(benchmark::State& st) { decide_windows(st, false, true); }
BENCHMARK(BM_DecideNoisyRanks)->Arg(4)->Arg(32)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);

// Online fine-tuning: adds reward, transition storage and hand-off.
void BM_DecideLearning(benchmark::State& st) { decide_windows(st, true, false); }
BENCHMARK(BM_DecideLearning)->Arg(4)->Arg(32)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);

// The per-step check on rank 0 (BatchPolicy::wants_decision: the change alarm, the spell watch,
// the switch-cost and tracking bookkeeping), which every step of a run waits for; the policy has
// decided one window first, so the alarm and the spell watch are armed as in a run.
void BM_StepCheck(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  auto policy = shipped_policy(false);
  std::mt19937_64 rng(1);
  ClusterState s = make_state(n, rng);
  WindowStream windows(s, false);
  for (int w = 0; w < 3; ++w) {
    windows.next(s);
    policy->decide(s);
  }
  std::normal_distribution<double> z(0, 0.05);
  std::vector<std::vector<double>> steps(64, std::vector<double>(n));
  for (auto& step : steps)
    for (int i = 0; i < n; ++i) step[i] = s.nodes[i].compute_s * (1 + z(rng));
  size_t k = 0;
  for (auto _ : st) benchmark::DoNotOptimize(policy->wants_decision(steps[k++ % steps.size()]));
  st.SetLabel(std::to_string(n) + " ranks");
}
BENCHMARK(BM_StepCheck)->Arg(4)->Arg(32)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);

// The same check before the run's first decision, where each rank's start steps are kept and judged
// again when its level falls (SpellWatch's start references, docs/AGENT.md item 35): the first 66
// steps of a fresh policy (2 start-up steps, then the 64 kept at most), per step.
void BM_StartStepCheck(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  std::mt19937_64 rng(1);
  const ClusterState s = make_state(n, rng);
  std::normal_distribution<double> z(0, 0.05);
  std::vector<std::vector<double>> steps(66, std::vector<double>(n));
  for (auto& step : steps)
    for (int i = 0; i < n; ++i) step[i] = s.nodes[i].compute_s * (1 + z(rng));
  for (auto _ : st) {
    st.PauseTiming();
    auto policy = shipped_policy(false);
    st.ResumeTiming();
    for (const auto& step : steps) benchmark::DoNotOptimize(policy->wants_decision(step));
  }
  st.SetItemsProcessed(st.iterations() * int64_t(steps.size()));
  st.SetLabel(std::to_string(n) + " ranks, 66 steps an iteration");
}
BENCHMARK(BM_StartStepCheck)->Arg(32)->Arg(1024)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace dynamix

BENCHMARK_MAIN();
