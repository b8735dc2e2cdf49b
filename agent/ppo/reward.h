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
//   r_t = w_eff   * (goodput_t / goodput_ref - 1)
//       - w_inst  * (max(0, loss_trend_t - spike_threshold) + max(0, log(gvar_t / gvar_{t-1})))
//       - w_churn * mean_i |b_i,t - b_i,t-1| / b_i,t-1
//       + w_gen   * generalization_t
//       - w_oom   * [some rank ran out of memory during window t]
//
//   goodput_t   = (B_t / step_time_t) * E(B_t),  step_time_t = max_i (data+compute+wait+comm+opt)_i
//   E(B)        = (B_noise + B_ref) / (B_noise + B)   (Pollux; 1 while B_noise is unknown)
//   goodput_ref = goodput of the first window of the episode (B_ref is its global batch)
//   generalization_t = Δ test accuracy when both windows have one, else clip(-loss_trend_t, -1, 1)
//
// Every term is clipped to [-10, 10] so one broken measurement cannot dominate a rollout.
// The reference makes the efficiency term scale-free: 0 at the starting plan, 1 = twice as fast.
struct RewardTerms {
  double efficiency = 0, instability = 0, churn = 0, generalization = 0, oom = 0, total = 0;
  double goodput = 0;  // samples/s x E(B) of the window
};

class RewardTracker {
 public:
  explicit RewardTracker(RewardWeights weights = {}) : w_(weights) {}

  // Starts an episode: the next observed window becomes the reference.
  void reset() { has_ref_ = false; }
  bool has_reference() const { return has_ref_; }

  // Records a window without rewarding anything (the episode's first observation).
  void observe_first(const ClusterState& state);
  // Reward for the window `state` (which ran under `prev_batches`), then remembers it.
  RewardTerms reward(const ClusterState& state, const std::vector<int32_t>& prev_batches);

  double reference_goodput() const { return ref_goodput_; }
  void set_reference(double goodput, double global_batch);  // restored from a checkpoint
  double reference_batch() const { return ref_batch_; }

 private:
  RewardWeights w_;
  bool has_ref_ = false;
  double ref_goodput_ = 0, ref_batch_ = 0;
  double prev_gvar_ = 0, prev_accuracy_ = -1;
};

// Goodput of one window: (B / step_time) * E(B) with B0 = ref_batch (<= 0: E = 1).
double window_goodput(const ClusterState& state, double ref_batch);

}  // namespace dynamix
