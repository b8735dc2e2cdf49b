// DYNAMIX — Google Benchmark of ClusterSimulator::step_window (20-step windows) at 32/256/1024 nodes.
#include <benchmark/benchmark.h>

#include "agent/gns_policy.h"
#include "agent/proportional_policy.h"
#include "agent/sim/cluster_simulator.h"

namespace dynamix {
namespace {

constexpr int64_t kWindow = 20;

ClusterSimulator make_sim(int32_t nodes) {
  SimConfig c = preset_sim_config("mixed", nodes);
  c.workload.target_progress = 1e12;  // never ends inside the benchmark
  BatchBounds b;
  b.max = {512};
  return ClusterSimulator(c, b, {64}, kWindow);
}

// One decision window of simulation; items = simulated steps.
void BM_StepWindow(benchmark::State& state) {
  ClusterSimulator sim = make_sim(int32_t(state.range(0)));
  sim.reset();
  BatchPlan plan;
  plan.batch_sizes = sim.plan();
  for (auto _ : state) benchmark::DoNotOptimize(sim.step_window(plan));
  state.SetItemsProcessed(state.iterations() * kWindow);
  // Seconds per simulated step (Google Benchmark prints it with an SI prefix, e.g. 25u).
  state.counters["per_step"] = benchmark::Counter(
      double(kWindow), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_StepWindow)->Arg(32)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);

// A policy decision on the simulator's state (what `dynamix sim` adds per window).
template <class Policy>
void BM_Decide(benchmark::State& state) {
  ClusterSimulator sim = make_sim(int32_t(state.range(0)));
  ClusterState s = sim.reset();
  Policy policy;
  s = sim.step_window(policy.decide(s));
  for (auto _ : state) benchmark::DoNotOptimize(policy.decide(s));
}
BENCHMARK_TEMPLATE(BM_Decide, ProportionalPolicy)->Arg(32)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_Decide, GnsPolicy)->Arg(32)->Arg(1024)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace dynamix

BENCHMARK_MAIN();
