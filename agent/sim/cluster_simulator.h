// DYNAMIX — discrete-step simulator of a heterogeneous data-parallel cluster (no MPI, no torch).
// Model (../shared/DESIGN.md "Cluster simulator"): rank i computes for
// (alpha_i + beta_i·b_i) · slowdown_i(t) · noise; a ring allreduce takes
// 2(N-1)/N · S/BW + 2(N-1)·latency; a step lasts max_i compute_i + comm; a step with global batch
// B advances training by 1/(1 + B_noise/B) equivalent small-batch steps, B_noise growing with
// progress; the run ends at workload.target_progress.
#pragma once

#include <cstdint>
#include <vector>

#include "agent/batch_policy.h"
#include "agent/cluster_state.h"
#include "agent/sim/sim_config.h"
#include "framework/core/random.h"

namespace dynamix {

struct SimTotals {
  int64_t steps = 0;
  double sim_time_s = 0;
  double time_to_target_s = -1;  // -1 until target_progress is reached
  double samples = 0;            // sum over steps of B
  double wait_s = 0;             // sum over steps and ranks of straggler wait
  double progress = 0;           // equivalent small-batch steps done
  // Time the load-balanced plan would have taken for the same global batches, its step by step
  // under the same noise draws: noise the plan cannot remove is not counted against it.
  double ideal_time_s = 0;
  int32_t nodes = 0;
  double mean_throughput() const { return sim_time_s > 0 ? samples / sim_time_s : 0; }
  // Throughput as a fraction of the load-balanced plan's at the same global batches and noise
  // (it may pass 1 by a little: under noise, balanced means are not always the fastest plan).
  double ideal_fraction() const { return sim_time_s > 0 ? ideal_time_s / sim_time_s : 0; }
  // Fraction of rank-time spent waiting for the slowest rank.
  double mean_wait_fraction() const { return sim_time_s > 0 ? wait_s / (double(nodes) * sim_time_s) : 0; }
};

class ClusterSimulator {
 public:
  // bounds.max: empty, one value or one per node; initial_plan: one value or one per node.
  // Throws dynamix::Error when the plan or bounds do not fit the cluster.
  ClusterSimulator(SimConfig config, BatchBounds bounds, std::vector<int32_t> initial_plan, int64_t window);

  // Starts over (same seed, same run) and simulates the first window with the initial plan, as a
  // real run does before its first decision; returns that window's state. A `listener` may end
  // that window early, as in step_window.
  ClusterState reset(BatchPolicy* listener = nullptr);
  // Simulates the plan up to the next regular decision (every `window` steps; fewer when the
  // target is reached) and returns those steps' state. With a `listener`, it sees every step's
  // compute times and may ask for a decision before the window ends: one more step is simulated
  // (the request's latency in a real run) and the window ends there. Throws dynamix::Error for a
  // plan of the wrong length or outside [1, b_max_i].
  ClusterState step_window(const BatchPlan& plan, BatchPolicy* listener = nullptr);

  bool done() const;  // target reached, or config.max_steps hit
  double sim_time() const { return totals_.sim_time_s; }
  int64_t steps() const { return totals_.steps; }
  SimTotals totals() const { return totals_; }

  int32_t nodes() const { return n_; }
  int64_t window() const { return window_; }
  const SimConfig& config() const { return config_; }
  const BatchBounds& bounds() const { return bounds_; }
  const std::vector<int32_t>& plan() const { return plan_; }
  double comm_time() const { return comm_s_; }
  // Current B_noise (grows from workload.b_noise to b_noise · b_noise_growth).
  double noise_scale() const;
  // Throughput (samples/s) of global batch B split so that every rank's noiseless compute ends
  // together under the current slowdowns, within the batch bounds: the load-balanced ideal.
  double balanced_throughput(double global_batch) const;
  // Each rank's noiseless compute time (s) under that balanced split of `global_batch`.
  void balanced_compute(double global_batch, std::vector<double>& compute) const;

 private:
  static constexpr int64_t kDriftSamples = 50;  // slowdown updates per drift cycle
  void simulate(int64_t steps, BatchPolicy* listener);
  void update_slowdowns();
  double recent_compute(int32_t rank) const;  // mean compute of the window's last quarter (win_steps_ > 0)
  ClusterState make_state();

  SimConfig config_;
  BatchBounds bounds_;
  std::vector<int32_t> initial_plan_, plan_;
  std::vector<char> switched_;  // ranks whose batch the last plan changed (their next step pays)
  int64_t window_;
  int32_t n_;
  double comm_s_ = 0;
  double ring_bytes_ = 0;  // bytes each rank sends per allreduce

  // Run state.
  Rng rng_;
  SimTotals totals_;
  int64_t window_index_ = 0;
  int64_t next_event_step_ = 0;
  double prev_loss_ = 0;
  std::vector<double> slowdown_;
  double ideal_batch_ = -1;            // B of ideal_compute_; -1 after the slowdowns change
  std::vector<double> ideal_compute_;  // balanced_compute(ideal_batch_)

  // Per-window accumulators, sized once.
  std::vector<double> compute_, sum_compute_, sum_compute_sq_, sum_wait_;
  std::vector<double> step_compute_;  // the window's compute times, step-major, for its last quarter
  int64_t win_steps_ = 0;
  double win_time_ = 0, win_loss_ = 0, win_gnorm_ = 0, win_gnorm_sq_ = 0, last_global_gsq_ = 0;
  std::vector<double> last_local_gsq_;
};

}  // namespace dynamix
