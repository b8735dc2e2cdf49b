// DYNAMIX benchmark — cost of Monitor::sample() (called once per decision window) per source.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include "bpf/monitor.h"
#include "framework/core/error.h"

namespace {

void run(benchmark::State& state, dynamix::EbpfMode mode, const char* want) {
  std::unique_ptr<dynamix::Monitor> mon;
  try {
    mon = dynamix::Monitor::create(mode, {int(::getpid())}, 0);
  } catch (const dynamix::Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  if (mon->source() != want) {
    state.SkipWithError(("source is " + mon->source() + ": " + mon->fallback_reason()).c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(mon->sample());
  state.SetLabel(mon->source() + ", " + std::to_string(mon->last_net().flows.size()) + " flows");
}

void BM_SampleEbpf(benchmark::State& state) { run(state, dynamix::EbpfMode::kOn, "ebpf"); }
void BM_SampleProcfs(benchmark::State& state) { run(state, dynamix::EbpfMode::kOff, "procfs"); }
BENCHMARK(BM_SampleEbpf)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SampleProcfs)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
