// DYNAMIX — PPO update: GAE -> advantage normalisation -> shuffled minibatch epochs -> stats.
#include "agent/ppo/ppo_learner.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "agent/ppo/moves.h"
#include "agent/ppo/ppo_math.h"
#include "framework/core/error.h"
#include "framework/core/random.h"

namespace dynamix {
namespace {

// The whole rollout as tensors.
struct Batch {
  torch::Tensor pooled, global, actions, old_logp, old_value, adv, returns;
};

Batch collate(const Rollout& r, const std::vector<double>& adv, const std::vector<double>& ret,
              int64_t node_dim, int64_t global_dim) {
  const int64_t t = static_cast<int64_t>(r.steps.size());
  std::vector<float> pooled, global, logp(t), value(t), a(t), rt(t);
  std::vector<int64_t> actions(t);
  for (int64_t k = 0; k < t; ++k) {
    const Transition& s = r.steps[k];
    DYNAMIX_CHECK(static_cast<int64_t>(s.pooled.size()) == 2 * node_dim &&
                      static_cast<int64_t>(s.global.size()) == global_dim && s.action >= 0,
                  "ppo: malformed transition in rollout");
    pooled.insert(pooled.end(), s.pooled.begin(), s.pooled.end());
    global.insert(global.end(), s.global.begin(), s.global.end());
    actions[k] = s.action;
    logp[k] = static_cast<float>(s.logp);
    value[k] = static_cast<float>(s.value);
    a[k] = static_cast<float>(adv[k]);
    rt[k] = static_cast<float>(ret[k]);
  }
  Batch b;
  b.pooled = torch::tensor(pooled).view({t, 2 * node_dim});
  b.global = torch::tensor(global).view({t, global_dim});
  b.actions = torch::tensor(actions);
  b.old_logp = torch::tensor(logp);
  b.old_value = torch::tensor(value);
  b.adv = torch::tensor(a);
  b.returns = torch::tensor(rt);
  return b;
}

}  // namespace

std::string UpdateStats::to_string() const {
  std::ostringstream os;
  os << "policy_loss=" << policy_loss << " value_loss=" << value_loss << " entropy=" << entropy
     << " approx_kl=" << approx_kl << " clipfrac=" << clipfrac << " explained_var=" << explained_variance
     << " mean_reward=" << mean_reward << " epochs=" << epochs << (early_stop ? " (target kl)" : "");
  return os.str();
}

PpoLearner::PpoLearner(const PpoConfig& config, int64_t node_dim, int64_t global_dim)
    : config_(config),
      net_(node_dim, global_dim, config.hidden, kMoves, config.seed),
      rng_(config.seed ^ kGoldenGamma) {
  validate(config_);
  std::vector<float> prior(kMoves, 0.f);
  prior[static_cast<size_t>(config_.prior_action)] = static_cast<float>(config_.prior_logit);
  net_->set_action_bias(prior);
  prior_log_probs_ = torch::log_softmax(torch::tensor(prior), -1);
  reset_optimizer();
}

void PpoLearner::reset_optimizer() {
  optimizer_ = std::make_unique<torch::optim::Adam>(
      net_->parameters(), torch::optim::AdamOptions(config_.learning_rate).eps(config_.adam_eps));
}

UpdateStats PpoLearner::update(const Rollout& rollout) {
  torch::AutoGradMode grad_on(true);  // callers may hold a NoGradGuard (inference thread)
  const PpoConfig& c = config_;
  const size_t t = rollout.steps.size();
  DYNAMIX_CHECK(t > 0, "ppo: empty rollout");
  UpdateStats stats;
  stats.transitions = static_cast<int64_t>(t);

  // 1. GAE over the rollout, bootstrapped from V(s_T) unless the last transition ended an episode.
  std::vector<double> rewards(t), values(t);
  std::vector<bool> terminal(t);
  for (size_t k = 0; k < t; ++k) {
    rewards[k] = rollout.steps[k].reward;
    values[k] = rollout.steps[k].value;
    terminal[k] = rollout.steps[k].terminal;
    stats.mean_reward += rewards[k] / t;
  }
  Gae gae = compute_gae(rewards, values, terminal, rollout.last_value, c.gamma, c.gae_lambda);

  // 2. Advantage normalisation over the rollout (returns stay unnormalised for the value loss).
  std::vector<double> adv = c.norm_adv ? normalize_advantages(gae.advantages) : gae.advantages;
  Batch b = collate(rollout, adv, gae.returns, net_->node_dim(), net_->global_dim());

  // 3. Epochs of shuffled minibatches, each sample once per epoch (no replacement).
  const int64_t mb_size = std::max<int64_t>(1, static_cast<int64_t>(t) / c.num_minibatches);
  std::vector<int64_t> order(t);
  std::iota(order.begin(), order.end(), 0);
  net_->train();
  for (int64_t epoch = 0; epoch < c.update_epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng_);
    for (int64_t start = 0; start < static_cast<int64_t>(t); start += mb_size) {
      int64_t end = std::min<int64_t>(start + mb_size, t);
      auto idx = torch::tensor(std::vector<int64_t>(order.begin() + start, order.begin() + end));
      PolicyOutput out = net_->forward_pooled(b.pooled.index_select(0, idx), b.global.index_select(0, idx));
      auto new_logp = action_log_prob(out.logits, b.actions.index_select(0, idx));
      PpoLoss loss =
          ppo_loss(new_logp, b.old_logp.index_select(0, idx), b.adv.index_select(0, idx), out.value,
                   b.old_value.index_select(0, idx), b.returns.index_select(0, idx), entropy(out.logits), c);
      if (c.prior_kl_coef > 0)
        loss.total = loss.total + c.prior_kl_coef * kl_to(out.logits, prior_log_probs_).mean();

      optimizer_->zero_grad();
      loss.total.backward();
      torch::nn::utils::clip_grad_norm_(net_->parameters(), c.max_grad_norm);
      optimizer_->step();

      stats.policy_loss = loss.policy.item<double>();
      stats.value_loss = loss.value.item<double>();
      stats.entropy = loss.entropy.item<double>();
      stats.approx_kl = loss.approx_kl;
      stats.clipfrac = loss.clipfrac;
      ++stats.minibatches;
    }
    stats.epochs = epoch + 1;
    // 4. Early stop once the new policy drifted too far from the one that collected the data.
    if (c.target_kl > 0 && stats.approx_kl > c.target_kl) {
      stats.early_stop = true;
      break;
    }
  }
  stats.explained_variance = explained_variance(values, gae.returns);
  return stats;
}

}  // namespace dynamix
