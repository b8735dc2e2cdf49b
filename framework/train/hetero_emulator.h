// DYNAMIX — heterogeneity emulation on one machine: per-rank compute slowdown (sleep (f-1) x the
// measured compute time), per-rank link cap (delay so the allreduce takes what a ring over that
// link would), timed events that change either, drifts (events with period_steps) that move a
// rank's slowdown smoothly up and down, and jitter: each step's slowdown times a mean-one
// log-normal draw, as on a node shared with other jobs; and a fixed time per step that the slowdown
// does not scale (a slow host path). Config: `hetero` (DESIGN.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "framework/config/config.h"

namespace dynamix {

class HeteroEmulator {
 public:
  // `seed` (train.seed) fixes the jitter draws: step s of rank r draws the same factor in every
  // run with that seed, resumed or not.
  HeteroEmulator(const HeteroConfig& config, int rank, int world, uint64_t seed);

  // Applies every event with at_step <= step not applied yet, and sets the slowdown of this step:
  // the last step change's times every started drift's factor times this step's jitter draw
  // (call at the start of each step). Emulation only adds time: below 1 the slowdown does nothing.
  void on_step(int64_t step);

  double slowdown() const { return slowdown_; }
  // The fixed seconds every training step's compute takes on top (hetero.step_overhead_ms).
  double step_overhead_s() const { return step_overhead_s_; }
  double bandwidth_mbps() const { return bandwidth_mbps_; }

  // Extra seconds to add after `measured_s` of compute.
  double compute_delay(double measured_s) const;
  // The slowdown applied while computing, so that what waits on compute (gradients handed to
  // the comm thread during backward) comes as late as on a slower device: start_compute() at the
  // start, then pace() at each such point sleeps (f-1) x the compute since the previous one.
  void start_compute();
  void pace();
  // Extra seconds so that allreducing `bytes` (as sent: compressed when a codec is on) took what a
  // ring over a link of bandwidth_mbps takes.
  double comm_delay(size_t bytes, double measured_s) const;

  static void sleep_seconds(double s);

 private:
  const HeteroConfig& config_;
  int rank_;
  int world_;
  uint64_t seed_;
  double jitter_ = 0.0;
  double step_overhead_s_ = 0.0;
  struct Drift {
    double slowdown;
    int64_t at_step, period_steps;
  };
  double base_slowdown_ = 1.0;  // what step changes set; drifts multiply it
  std::vector<Drift> drifts_;
  double slowdown_ = 1.0;
  double bandwidth_mbps_ = 0.0;
  std::vector<bool> applied_;
  std::chrono::steady_clock::time_point mark_;
};

}  // namespace dynamix
