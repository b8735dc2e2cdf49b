// DYNAMIX — rollout storage and the PPO update (CleanRL's ppo.py, top to bottom).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "agent/ppo/actor_critic.h"
#include "agent/ppo/ppo_config.h"

namespace dynamix {

// One decision window: the pooled normalised observation, the cluster's move, and what followed.
struct Transition {
  std::vector<float> pooled;  // 2 x node_dim: [mean ‖ max] of every rank's normalised row
  std::vector<float> global;  // global_dim, normalised
  int64_t action = 0;         // the move (moves.h)
  double logp = 0;            // log pi(action | s) under the acting network
  double value = 0;           // V(s) under the acting network
  double reward = 0;          // reward of the window that ran under this action
  bool terminal = false;      // the episode ended after this transition
};

struct Rollout {
  std::vector<Transition> steps;
  double last_value = 0;  // V of the state following the last transition (ignored when terminal)
};

struct UpdateStats {
  double policy_loss = 0, value_loss = 0, entropy = 0, approx_kl = 0, clipfrac = 0;
  double explained_variance = 0, mean_reward = 0;
  int64_t epochs = 0, minibatches = 0, transitions = 0;
  bool early_stop = false;  // target KL reached
  std::string to_string() const;
};

// Owns the training network and its Adam optimiser.
class PpoLearner {
 public:
  PpoLearner(const PpoConfig& config, int64_t node_dim, int64_t global_dim);

  UpdateStats update(const Rollout& rollout);
  // Fresh Adam moments (after a failed update left them non-finite).
  void reset_optimizer();

  ActorCritic& net() { return net_; }
  torch::optim::Adam& optimizer() { return *optimizer_; }
  const PpoConfig& config() const { return config_; }
  std::mt19937_64& rng() { return rng_; }

 private:
  PpoConfig config_;
  ActorCritic net_;
  torch::Tensor prior_log_probs_;  // the untrained head's action distribution (prior_kl_coef)
  std::unique_ptr<torch::optim::Adam> optimizer_;
  std::mt19937_64 rng_;
};

}  // namespace dynamix
