// DYNAMIX — the per-window reward of the dynamix policy (documented in docs/AGENT.md, "Reward").
#pragma once

#include <cstdint>
#include <vector>

#include "agent/cluster_state.h"
#include "agent/ppo/ppo_config.h"

namespace dynamix {

// Reward for the action taken at window t-1, computed from the state observed at window t
// (the window that ran under that action):
//
//   r_t = w_eff   * throughput_t / ideal_t
//       - w_inst  * (max(0, loss_trend_t - spike_threshold) + max(0, log(gvar_t / gvar_{t-1})))
//       - w_churn * mean_i |b_i,t - b_i,t-1| / b_i,t-1
//       + w_gen   * generalization_t
//       - w_oom   * [some rank ran out of memory during window t]
//
//   throughput_t = B_t / step_time_t,  step_time_t = max_i (data+compute+wait+comm+opt)_i
//   ideal_t      = samples/s of the load-balanced plan at B_t: the simulator's exact value
//                  (GlobalStats::ideal_throughput) or, in real runs, the policy's estimate from
//                  the fitted per-rank models
//   generalization_t = Δ test accuracy when both windows have one, else clip(-loss_trend_t, -1, 1)
//
// The efficiency term is the fraction of the balanced ideal, so it is scale-free and comparable
// across clusters (1 = perfectly balanced). Every term is clipped so one broken measurement
// cannot dominate a rollout.
struct RewardTerms {
  double efficiency = 0, instability = 0, churn = 0, generalization = 0, oom = 0, total = 0;
  double throughput = 0, ideal = 0;  // samples/s of the window and of the balanced plan
};

class RewardTracker {
 public:
  explicit RewardTracker(RewardWeights weights = {}) : w_(weights) {}

  // Starts an episode: the next window is observed, not rewarded.
  void reset() { has_first_ = false; }
  // Records a window without rewarding anything (the episode's first observation).
  void observe_first(const ClusterState& state);
  // Reward for the window `state` (which ran under `prev_batches`), then remembers it.
  // `ideal_estimate` (samples/s) is used when the state carries no ideal_throughput.
  RewardTerms reward(const ClusterState& state, const std::vector<int32_t>& prev_batches,
                     double ideal_estimate);

 private:
  RewardWeights w_;
  bool has_first_ = false;
  double prev_gvar_ = 0, prev_accuracy_ = -1;
};

// B / step_time of one window (0 when the window has no time).
double window_throughput(const ClusterState& state);

}  // namespace dynamix
