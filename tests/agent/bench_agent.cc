// DYNAMIX — decision latency of the dynamix policy (state encoding + inference + projection).
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

// Inference only (the shipped policy): what a training step waits for every window.
void BM_DecideInference(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  auto policy_ptr = shipped_policy(false);
  DynamixPolicy& policy = *policy_ptr;
  std::mt19937_64 rng(1);
  ClusterState s = make_state(n, rng);
  for (auto _ : st) benchmark::DoNotOptimize(policy.decide(s));
  st.SetLabel(std::to_string(n) + " ranks");
}
BENCHMARK(BM_DecideInference)->Arg(4)->Arg(32)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);

// Inference where a quarter of the ranks scatter 1.5-6x more than the rest (5 % step noise), each
// window's means drawn with that noise: after 4 windows every decision searches the noise-aware
// split (agent/noise_split.h), the worst case for latency.
void BM_DecideNoisyRanks(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  auto policy_ptr = shipped_policy(false);
  DynamixPolicy& policy = *policy_ptr;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(0.075, 0.3);
  std::normal_distribution<double> z(0, 1);
  ClusterState s = make_state(n, rng);
  std::vector<double> base(n), noise(n);
  for (int i = 0; i < n; ++i) {
    base[i] = s.nodes[i].compute_s;
    noise[i] = i % 4 == 3 ? u(rng) : 0.05;
    s.nodes[i].steps = 20;
    s.nodes[i].compute_rel_se = noise[i] / std::sqrt(20.0);
  }
  for (auto _ : st) {
    st.PauseTiming();
    ++s.window;  // window 0 would start a new episode (models reset) every time
    s.global.step += 20;
    for (int i = 0; i < n; ++i) s.nodes[i].compute_s = base[i] * (1 + s.nodes[i].compute_rel_se * z(rng));
    st.ResumeTiming();
    benchmark::DoNotOptimize(policy.decide(s));
  }
  st.SetLabel(std::to_string(n) + " ranks");
}
BENCHMARK(BM_DecideNoisyRanks)->Arg(4)->Arg(32)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);

// Online fine-tuning: adds reward, transition storage and hand-off; PPO updates run on the worker.
void BM_DecideLearning(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  auto policy_ptr = shipped_policy(true);
  DynamixPolicy& policy = *policy_ptr;
  std::mt19937_64 rng(1);
  ClusterState s = make_state(n, rng);
  for (auto _ : st) {
    BatchPlan p = policy.decide(s);
    for (int i = 0; i < n; ++i) s.nodes[i].batch_size = p.batch_sizes[i];
  }
  st.SetLabel(std::to_string(n) + " ranks, " + std::to_string(policy.updates()) + " updates");
}
BENCHMARK(BM_DecideLearning)->Arg(4)->Arg(32)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace dynamix

BENCHMARK_MAIN();
