// DYNAMIX — every PPO hyper-parameter and reward weight in one place, printed at start and saved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dynamix {

// Weights of the per-window reward terms (see agent/ppo/reward.h and docs/AGENT.md).
// With a fixed global batch the split changes neither the loss nor the gradient statistics, so
// instability and generalization only add noise there: they are off by default (set them for
// research on adaptive batches). Churn is small: it breaks ties toward holding.
struct RewardWeights {
  double efficiency = 1.0;        // throughput as a fraction of the load-balanced ideal
  double instability = 0.0;       // loss spikes and gradient-norm-variance jumps
  double churn = 0.02;            // mean relative size of the batch change
  double generalization = 0.0;    // improvement of test accuracy or training loss
  double spike_threshold = 0.05;  // loss rises below this relative amount are noise, not spikes
  double oom = 2.0;               // a plan that ran a rank out of memory (per window it happened)
};

// PPO as in CleanRL's ppo.py, with the literature's defaults.
struct PpoConfig {
  // Optimisation.
  double gamma = 0.9;        // discount (a move pays off in the next windows, not hundreds later)
  double gae_lambda = 0.95;  // GAE(lambda)
  double clip_coef = 0.2;    // ratio clip (also the value clip when clip_vloss)
  bool clip_vloss = true;    // clipped value loss
  double learning_rate = 3e-4;
  double adam_eps = 1e-5;
  int64_t update_epochs = 4;
  int64_t num_minibatches = 4;
  double vf_coef = 0.5;
  double ent_coef = 0.01;
  double max_grad_norm = 0.5;
  double target_kl = 0.02;        // stop the epochs once approx-KL exceeds it (<= 0: never)
  bool norm_adv = true;           // (adv - mean) / (std + 1e-8) over the rollout
  int64_t rollout_windows = 128;  // transitions (decision windows) per update
  bool background_update = true;  // update on a worker thread; false = inside decide()

  // Network: one MLP shared by all ranks, one for the value.
  std::vector<int64_t> hidden = {64, 64};
  // Residual start: the untrained policy head favours "move to the balanced plan" by this logit,
  // so learning begins from the heuristic and improves on it (actions: agent/ppo/moves.h).
  double prior_logit = 1.5;
  int64_t prior_action = 2;  // the move it favours (kSlow in moves.h)
  // Weight of KL(policy || prior) in the loss, the prior being the untrained head's distribution:
  // the policy leaves the heuristic only where the advantage pays for it, which keeps pretraining
  // seeds from settling on moves that lose to the heuristic on clusters they never saw.
  double prior_kl_coef = 0.05;

  // Observation normalisation.
  double obs_clip = 5.0;
  // Feature groups the policy never sees (zeroed; agent/ppo/feature_groups.h), for ablations.
  std::vector<std::string> ablate;

  RewardWeights reward;
  uint64_t seed = 1;
};

// Bounds on the network's shape (validate): far above any policy's need (the shipped one is 64x64).
inline constexpr size_t kMaxHiddenLayers = 8;
inline constexpr int64_t kMaxHiddenWidth = 1024;

// "key=value" lines, one per field (multipliers and hidden as comma lists).
std::string to_string(const PpoConfig& config);
// Inverse of to_string; unknown keys or bad values throw dynamix::Error naming the key.
PpoConfig ppo_config_from_string(const std::string& text);
// Throws dynamix::Error naming the field when a value is impossible.
void validate(const PpoConfig& config);

}  // namespace dynamix
