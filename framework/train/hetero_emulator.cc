// DYNAMIX — heterogeneity emulator.
#include "framework/train/hetero_emulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "framework/core/clock.h"
#include "framework/core/random.h"
#include "framework/core/stats.h"

namespace dynamix {

HeteroEmulator::HeteroEmulator(const HeteroConfig& config, int rank, int world, uint64_t seed)
    : config_(config), rank_(rank), world_(world), seed_(seed), applied_(config.events.size(), false) {
  auto pick = [&](const std::vector<double>& v, double def) {
    if (v.empty()) return def;
    return v.size() == 1 ? v[0] : v[static_cast<size_t>(rank)];
  };
  base_slowdown_ = slowdown_ = pick(config.slowdown, 1.0);
  bandwidth_mbps_ = pick(config.bandwidth_mbps, 0.0);
  jitter_ = pick(config.jitter, 0.0);
  step_overhead_s_ = pick(config.step_overhead_ms, 0.0) / 1e3;
}

void HeteroEmulator::on_step(int64_t step) {
  // Every due event not yet applied, in file order: a resumed run catches up in one call.
  for (size_t k = 0; k < config_.events.size(); ++k) {
    const auto& e = config_.events[k];
    if (applied_[k] || e.at_step > step) continue;
    applied_[k] = true;
    if (e.rank != rank_) continue;
    if (e.period_steps > 0) {
      drifts_.push_back({e.slowdown.value_or(1.0), e.at_step, e.period_steps});
      continue;
    }
    if (e.slowdown) base_slowdown_ = *e.slowdown;
    if (e.bandwidth_mbps) bandwidth_mbps_ = *e.bandwidth_mbps;
  }
  slowdown_ = base_slowdown_;
  for (const Drift& d : drifts_) slowdown_ *= drift_factor(d.slowdown, step - d.at_step, d.period_steps);
  if (jitter_ > 0) {
    // A generator per (seed, rank, step): the draw does not depend on the steps before it.
    Rng rng(mix64(mix64(seed_ ^ static_cast<uint64_t>(rank_)) ^ static_cast<uint64_t>(step)));
    slowdown_ *= rng.lognormal_factor(std::sqrt(std::log1p(jitter_ * jitter_)));
  }
}

double HeteroEmulator::compute_delay(double measured_s) const {
  return slowdown_ > 1.0 ? (slowdown_ - 1.0) * measured_s : 0.0;
}

void HeteroEmulator::start_compute() { mark_ = std::chrono::steady_clock::now(); }

void HeteroEmulator::pace() {
  sleep_seconds(compute_delay(seconds_since(mark_)));
  mark_ = std::chrono::steady_clock::now();
}

double HeteroEmulator::comm_delay(size_t bytes, double measured_s) const {
  if (bandwidth_mbps_ <= 0.0 || world_ < 2) return 0.0;
  // A ring allreduce moves 2(N-1)/N of the buffer through every link.
  const double wire_bits = 2.0 * (world_ - 1) / world_ * static_cast<double>(bytes) * 8.0;
  const double target = wire_bits / (bandwidth_mbps_ * 1e6);
  return std::max(0.0, target - measured_s);
}

void HeteroEmulator::sleep_seconds(double s) {
  if (s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

}  // namespace dynamix
