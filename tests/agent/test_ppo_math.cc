// DYNAMIX — PPO formulas against hand-computed values; normaliser; shared-weight equivariance.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "agent/ppo/actor_critic.h"
#include "agent/ppo/ppo_config.h"
#include "agent/ppo/ppo_math.h"
#include "agent/ppo/state_encoder.h"

namespace dynamix {
namespace {

TEST(PpoGae, MatchesHandComputedValues) {
  // gamma 0.9, lambda 0.8; the episode ends after transition 1.
  //   t=2: delta = 2 + 0.9*3 - 0 = 4.7                    A = 4.7
  //   t=1: delta = 0 - 1 (terminal, no bootstrap) = -1   A = -1
  //   t=0: delta = 1 + 0.9*1 - 0.5 = 1.4                  A = 1.4 + 0.72*(-1) = 0.68
  Gae g = compute_gae({1, 0, 2}, {0.5, 1.0, 0.0}, {false, true, false}, 3.0, 0.9, 0.8);
  ASSERT_EQ(g.advantages.size(), 3u);
  EXPECT_NEAR(g.advantages[0], 0.68, 1e-12);
  EXPECT_NEAR(g.advantages[1], -1.0, 1e-12);
  EXPECT_NEAR(g.advantages[2], 4.7, 1e-12);
  EXPECT_NEAR(g.returns[0], 1.18, 1e-12);
  EXPECT_NEAR(g.returns[1], 0.0, 1e-12);
  EXPECT_NEAR(g.returns[2], 4.7, 1e-12);
}

TEST(PpoGae, LambdaOneGivesDiscountedReturns) {
  Gae g = compute_gae({1, 1, 1}, {0, 0, 0}, {false, false, true}, 100.0, 0.5, 1.0);
  EXPECT_NEAR(g.returns[0], 1.75, 1e-12);  // 1 + 0.5 + 0.25, the terminal blocks last_value
  EXPECT_NEAR(g.returns[1], 1.5, 1e-12);
  EXPECT_NEAR(g.returns[2], 1.0, 1e-12);
}

TEST(PpoAdvantages, NormalizedWithParentheses) {
  auto z = normalize_advantages({1, 2, 3, 4});
  const double std = std::sqrt(5.0 / 3.0);  // Bessel
  EXPECT_NEAR(z[0], (1 - 2.5) / (std + 1e-8), 1e-9);
  EXPECT_NEAR(z[3], (4 - 2.5) / (std + 1e-8), 1e-9);
}

TEST(PpoLoss, ClippedObjectiveAndValueLossByHand) {
  PpoConfig c;  // clip 0.2, ent 0.01, vf 0.5
  // Sample 0: ratio 1.5, adv +1 -> clipped at 1.2: max(-1.5, -1.2) = -1.2.
  // Sample 1: ratio 0.9, adv -2 -> inside the band: 1.8.  Policy loss = 0.3.
  auto old_logp = torch::tensor({0.0, 0.0}, torch::kDouble);
  auto new_logp = torch::tensor({std::log(1.5), std::log(0.9)}, torch::kDouble).requires_grad_(true);
  auto adv = torch::tensor({1.0, -2.0}, torch::kDouble);
  // Values: old [0, 1], new [0.5, 0.9], returns [1, 0].
  //   sample 0: (0.5-1)^2 = 0.25, clipped v = 0.2 -> 0.64; max 0.64
  //   sample 1: 0.81 both ways.  Value loss = 0.5 * (0.64 + 0.81) / 2 = 0.3625.
  auto old_v = torch::tensor({0.0, 1.0}, torch::kDouble);
  auto new_v = torch::tensor({0.5, 0.9}, torch::kDouble);
  auto ret = torch::tensor({1.0, 0.0}, torch::kDouble);
  auto ent = torch::tensor({1.0, 2.0}, torch::kDouble);
  PpoLoss l = ppo_loss(new_logp, old_logp, adv, new_v, old_v, ret, ent, c);
  EXPECT_NEAR(l.policy.item<double>(), 0.3, 1e-12);
  EXPECT_NEAR(l.value.item<double>(), 0.3625, 1e-12);
  EXPECT_NEAR(l.entropy.item<double>(), 1.5, 1e-12);
  EXPECT_NEAR(l.total.item<double>(), 0.3 - 0.01 * 1.5 + 0.5 * 0.3625, 1e-12);
  EXPECT_NEAR(l.approx_kl, ((0.5 - std::log(1.5)) + (-0.1 - std::log(0.9))) / 2, 1e-12);
  EXPECT_NEAR(l.clipfrac, 0.5, 1e-12);

  // The clipped sample carries no policy gradient; the other one d/dlogp = -adv*ratio/2 = 0.9.
  l.policy.backward();
  auto g = new_logp.grad();
  EXPECT_NEAR(g[0].item<double>(), 0.0, 1e-12);
  EXPECT_NEAR(g[1].item<double>(), 0.9, 1e-12);

  c.clip_vloss = false;
  PpoLoss plain = ppo_loss(new_logp, old_logp, adv, new_v, old_v, ret, ent, c);
  EXPECT_NEAR(plain.value.item<double>(), 0.5 * (0.25 + 0.81) / 2, 1e-12);
}

TEST(PpoMath, ExplainedVariance) {
  EXPECT_NEAR(explained_variance({1, 2, 3}, {1, 2, 3}), 1.0, 1e-12);
  EXPECT_NEAR(explained_variance({0, 0, 0}, {1, 2, 3}), 0.0, 1e-12);
  EXPECT_TRUE(std::isnan(explained_variance({0, 0}, {1, 1})));
}

TEST(RunningNorm, MatchesBatchMeanAndVariance) {
  std::mt19937 rng(3);
  std::normal_distribution<float> d(4.0f, 3.0f);
  RunningNorm norm(2);
  std::vector<float> all;
  for (int batch = 0; batch < 20; ++batch) {
    int rows = 1 + batch % 7;
    std::vector<float> x;
    for (int r = 0; r < rows; ++r) {
      x.push_back(d(rng));
      x.push_back(10 * d(rng) - 7);
    }
    norm.update(x, rows);
    all.insert(all.end(), x.begin(), x.end());
  }
  const size_t n = all.size() / 2;
  for (int j = 0; j < 2; ++j) {
    double mean = 0, var = 0;
    for (size_t r = 0; r < n; ++r) mean += all[r * 2 + j] / n;
    for (size_t r = 0; r < n; ++r) var += (all[r * 2 + j] - mean) * (all[r * 2 + j] - mean) / n;
    EXPECT_NEAR(norm.mean()[j], mean, 1e-4 * std::abs(mean) + 1e-4);
    EXPECT_NEAR(norm.var()[j], var, 1e-4 * var);
  }
  EXPECT_NEAR(norm.count(), n, 1e-3);
  auto z = norm.normalize({1000.f, -1000.f}, 1, 5.0);  // clipped to +-5
  EXPECT_FLOAT_EQ(z[0], 5.f);
  EXPECT_FLOAT_EQ(z[1], -5.f);
}

TEST(ActorCritic, PooledContextIsPermutationInvariantAndSizeFree) {
  ActorCritic net(kNodeFeatures, kGlobalFeatures, std::vector<int64_t>{64, 64}, 5, 7);
  torch::NoGradGuard no_grad;
  for (int64_t n : {4, 32}) {
    auto node = torch::randn({1, n, kNodeFeatures});
    auto global = torch::randn({1, kGlobalFeatures});
    auto perm = torch::randperm(n, torch::kLong);
    PolicyOutput a = net->forward(node, global);
    PolicyOutput b = net->forward(node.index_select(1, perm), global);
    ASSERT_EQ(a.logits.sizes(), (std::vector<int64_t>{1, 5}));
    EXPECT_TRUE(torch::allclose(a.logits, b.logits, 1e-5, 1e-6));
    EXPECT_TRUE(torch::allclose(a.value, b.value, 1e-5, 1e-6));
    // Not a constant function: other rank features give other logits.
    PolicyOutput c = net->forward(node * 2, global);
    EXPECT_GT((a.logits - c.logits).abs().max().item<float>(), 0.f);
  }
}

TEST(ActorCritic, PaddedBatchOfMixedSizesMatchesSeparatePasses) {
  ActorCritic net(kNodeFeatures, kGlobalFeatures, std::vector<int64_t>{32, 32}, 5, 9);
  torch::NoGradGuard no_grad;
  auto small = torch::randn({1, 4, kNodeFeatures}), big = torch::randn({1, 32, kNodeFeatures});
  auto g = torch::randn({2, kGlobalFeatures});
  auto node = torch::zeros({2, 32, kNodeFeatures});
  node[0].slice(0, 0, 4).copy_(small[0]);
  node[1].copy_(big[0]);
  node[0].slice(0, 4, 32).fill_(100.f);  // padding must not leak into the pooled features
  auto mask = torch::zeros({2, 32}, torch::kBool);
  mask[0].slice(0, 0, 4).fill_(true);
  mask[1].fill_(true);
  PolicyOutput batched = net->forward(node, g, mask);
  PolicyOutput a = net->forward(small, g.slice(0, 0, 1)), b = net->forward(big, g.slice(0, 1, 2));
  EXPECT_TRUE(torch::allclose(batched.logits[0], a.logits[0], 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(batched.logits[1], b.logits[0], 1e-5, 1e-6));
  EXPECT_NEAR(batched.value[0].item<float>(), a.value[0].item<float>(), 1e-5);
  // What a transition stores (the pooled rows) gives the same output.
  PolicyOutput pooled = net->forward_pooled(ActorCriticImpl::pool(big), g.slice(0, 1, 2));
  EXPECT_TRUE(torch::allclose(pooled.logits, b.logits, 1e-6, 1e-7));

  auto lp = action_log_prob(batched.logits, torch::tensor({2, 4}, torch::kLong));
  EXPECT_NEAR(lp[0].item<float>(), torch::log_softmax(a.logits[0], -1)[2].item<float>(), 1e-5);
}

TEST(ActorCritic, KlToReferenceIsZeroOnlyAtTheReference) {
  const torch::Tensor logits = torch::tensor({{0.0, 0.0, 1.5, 0.0, 0.0}, {1.0, -1.0, 0.0, 2.0, 0.5}});
  const torch::Tensor ref = torch::log_softmax(torch::tensor({0.0, 0.0, 1.5, 0.0, 0.0}), -1);
  const torch::Tensor kl = kl_to(logits, ref);
  EXPECT_NEAR(kl[0].item<double>(), 0, 1e-7);
  // By hand: sum p (log p - log q).
  const torch::Tensor p = torch::softmax(logits[1], -1);
  EXPECT_NEAR(kl[1].item<double>(), (p * (p.log() - ref)).sum().item<double>(), 1e-6);
  EXPECT_GT(kl[1].item<double>(), 0.1);
}

TEST(PpoConfigText, RoundTripsAndRejectsUnknownKeys) {
  PpoConfig c;
  c.prior_logit = 0.75;
  c.hidden = {16};
  c.seed = 12345678901234ULL;
  c.reward.churn = 0.25;
  PpoConfig back = ppo_config_from_string(to_string(c));
  EXPECT_DOUBLE_EQ(back.prior_logit, 0.75);
  EXPECT_EQ(back.hidden, c.hidden);
  EXPECT_EQ(back.seed, c.seed);
  EXPECT_DOUBLE_EQ(back.reward.churn, 0.25);
  EXPECT_DOUBLE_EQ(back.gamma, PpoConfig{}.gamma);
  EXPECT_THROW(ppo_config_from_string("gama=0.9\n"), std::exception);
  EXPECT_THROW(ppo_config_from_string("gamma=1.5\n"), std::exception);
}

}  // namespace
}  // namespace dynamix
