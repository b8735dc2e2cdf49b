// DYNAMIX — the formulas of PPO as free functions, so tests can pin them against hand values.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "agent/ppo/ppo_config.h"

namespace dynamix {

struct Gae {
  std::vector<double> advantages, returns;
};

// GAE(lambda), CleanRL's backward loop. terminal[t] = the episode ended after transition t (its
// successor is not bootstrapped); last_value = V(s_T), the state after the last transition.
Gae compute_gae(const std::vector<double>& rewards, const std::vector<double>& values,
                const std::vector<bool>& terminal, double last_value, double gamma, double lambda);

// (x - mean) / (std + eps), std with Bessel's correction as torch.std.
std::vector<double> normalize_advantages(const std::vector<double>& adv, double eps = 1e-8);

struct PpoLoss {
  torch::Tensor total, policy, value, entropy;  // total = policy - ent_coef*entropy + vf_coef*value
  double approx_kl = 0;  // mean((ratio - 1) - log ratio), Schulman's low-variance estimator
  double clipfrac = 0;   // fraction of samples with |ratio - 1| > clip
};

// Clipped surrogate, clipped (or plain) value loss and entropy bonus over one minibatch. All [M].
PpoLoss ppo_loss(const torch::Tensor& new_logp, const torch::Tensor& old_logp,
                 const torch::Tensor& advantages, const torch::Tensor& new_value,
                 const torch::Tensor& old_value, const torch::Tensor& returns, const torch::Tensor& entropy,
                 const PpoConfig& config);

// 1 - Var(returns - values) / Var(returns); NaN when returns are constant.
double explained_variance(const std::vector<double>& values, const std::vector<double>& returns);

}  // namespace dynamix
