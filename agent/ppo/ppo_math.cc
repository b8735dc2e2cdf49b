// DYNAMIX — GAE, advantage normalisation, the clipped PPO loss, explained variance.
#include "agent/ppo/ppo_math.h"

#include <cmath>
#include <limits>

#include "framework/core/error.h"

namespace dynamix {

Gae compute_gae(const std::vector<double>& rewards, const std::vector<double>& values,
                const std::vector<bool>& terminal, double last_value, double gamma, double lambda) {
  const size_t n = rewards.size();
  DYNAMIX_CHECK(values.size() == n && terminal.size() == n,
                "compute_gae: rewards, values, terminal differ in length");
  Gae g;
  g.advantages.assign(n, 0.0);
  g.returns.assign(n, 0.0);
  double lastgaelam = 0;
  for (size_t k = n; k-- > 0;) {
    double next_nonterminal = terminal[k] ? 0.0 : 1.0;
    double next_value = k + 1 == n ? last_value : values[k + 1];
    double delta = rewards[k] + gamma * next_value * next_nonterminal - values[k];
    lastgaelam = delta + gamma * lambda * next_nonterminal * lastgaelam;
    g.advantages[k] = lastgaelam;
    g.returns[k] = lastgaelam + values[k];
  }
  return g;
}

std::vector<double> normalize_advantages(const std::vector<double>& adv, double eps) {
  const size_t n = adv.size();
  if (n == 0) return {};
  double mean = 0, var = 0;
  for (double a : adv) mean += a / n;
  for (double a : adv) var += (a - mean) * (a - mean);
  double std = n > 1 ? std::sqrt(var / (n - 1)) : 0.0;
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = (adv[i] - mean) / (std + eps);
  return out;
}

PpoLoss ppo_loss(const torch::Tensor& new_logp, const torch::Tensor& old_logp, const torch::Tensor& adv,
                 const torch::Tensor& new_value, const torch::Tensor& old_value, const torch::Tensor& returns,
                 const torch::Tensor& entropy, const PpoConfig& c) {
  PpoLoss out;
  auto logratio = new_logp - old_logp;
  auto ratio = logratio.exp();
  {
    torch::NoGradGuard no_grad;
    out.approx_kl = ((ratio - 1) - logratio).mean().item<double>();
    out.clipfrac = ((ratio - 1.0).abs() > c.clip_coef).to(torch::kFloat).mean().item<double>();
  }
  auto pg1 = -adv * ratio;
  auto pg2 = -adv * torch::clamp(ratio, 1 - c.clip_coef, 1 + c.clip_coef);
  out.policy = torch::max(pg1, pg2).mean();

  if (c.clip_vloss) {
    auto unclipped = (new_value - returns).pow(2);
    auto clipped_v = old_value + torch::clamp(new_value - old_value, -c.clip_coef, c.clip_coef);
    auto clipped = (clipped_v - returns).pow(2);
    out.value = 0.5 * torch::max(unclipped, clipped).mean();
  } else {
    out.value = 0.5 * (new_value - returns).pow(2).mean();
  }
  out.entropy = entropy.mean();
  out.total = out.policy - c.ent_coef * out.entropy + c.vf_coef * out.value;
  return out;
}

double explained_variance(const std::vector<double>& values, const std::vector<double>& returns) {
  const size_t n = returns.size();
  if (n == 0 || values.size() != n) return std::numeric_limits<double>::quiet_NaN();
  auto variance = [n](const std::vector<double>& x) {
    double m = 0, v = 0;
    for (double a : x) m += a / n;
    for (double a : x) v += (a - m) * (a - m);
    return v / n;
  };
  std::vector<double> diff(n);
  for (size_t i = 0; i < n; ++i) diff[i] = returns[i] - values[i];
  double var_y = variance(returns);
  return var_y == 0 ? std::numeric_limits<double>::quiet_NaN() : 1 - variance(diff) / var_y;
}

}  // namespace dynamix
