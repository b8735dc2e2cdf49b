// DYNAMIX — shared-weight actor-critic; orthogonal init from a private generator (no global RNG).
#include "agent/ppo/actor_critic.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

namespace dynamix {
namespace {

// Orthogonal init (Saxe et al.) with the given gain, as CleanRL's layer_init; bias 0.
torch::nn::Linear make_linear(int64_t in, int64_t out, double gain, at::Generator& gen) {
  torch::nn::Linear layer(in, out);
  torch::NoGradGuard no_grad;
  int64_t rows = std::max(in, out), cols = std::min(in, out);
  auto a = at::randn({rows, cols}, gen, torch::kFloat);
  auto qr = at::linalg_qr(a);
  auto q = std::get<0>(qr) * torch::sign(torch::diagonal(std::get<1>(qr)));  // unique Q
  if (out < in) q = q.t();                                                   // weight is [out, in]
  layer->weight.copy_(q.contiguous() * gain);
  layer->bias.zero_();
  return layer;
}

torch::nn::Sequential make_mlp(int64_t in, const std::vector<int64_t>& hidden, int64_t out, double out_gain,
                               at::Generator& gen) {
  torch::nn::Sequential mlp;
  int64_t width = in;
  for (int64_t h : hidden) {
    mlp->push_back(make_linear(width, h, std::sqrt(2.0), gen));
    mlp->push_back(torch::nn::Tanh());
    width = h;
  }
  mlp->push_back(make_linear(width, out, out_gain, gen));
  return mlp;
}

}  // namespace

ActorCriticImpl::ActorCriticImpl(int64_t node_dim, int64_t global_dim, const std::vector<int64_t>& hidden,
                                 int64_t actions, uint64_t seed)
    : node_dim_(node_dim), global_dim_(global_dim), actions_(actions) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  actor_ = register_module("actor", make_mlp(2 * node_dim + global_dim, hidden, actions, 0.01, gen));
  critic_ = register_module("critic", make_mlp(2 * node_dim + global_dim, hidden, 1, 1.0, gen));
}

torch::Tensor ActorCriticImpl::pool(const torch::Tensor& node, const torch::Tensor& mask) {
  if (!mask.defined()) return torch::cat({node.mean(1), std::get<0>(node.max(1))}, 1);
  auto m = mask.unsqueeze(-1).to(node.dtype());                            // [T, N, 1]
  auto mean = (node * m).sum(1) / m.sum(1).clamp_min(1.0);                 // [T, F]
  auto max = std::get<0>(node.masked_fill(m.logical_not(), -1e9).max(1));  // [T, F]
  return torch::cat({mean, max}, 1);
}

PolicyOutput ActorCriticImpl::forward(const torch::Tensor& node, const torch::Tensor& global,
                                      const torch::Tensor& mask) {
  return forward_pooled(pool(node, mask), global);
}

PolicyOutput ActorCriticImpl::forward_pooled(const torch::Tensor& pooled, const torch::Tensor& global) {
  auto context = torch::cat({pooled, global}, 1);  // [T, 2F + G]
  return {actor_->forward(context), critic_->forward(context).squeeze(-1)};
}

void ActorCriticImpl::set_action_bias(const std::vector<float>& bias) {
  TORCH_CHECK(static_cast<int64_t>(bias.size()) == actions_, "set_action_bias: one value per action");
  torch::NoGradGuard no_grad;
  auto head = actor_->ptr(actor_->size() - 1)->as<torch::nn::Linear>();
  head->bias.copy_(torch::tensor(bias));
}

void copy_parameters(ActorCritic& from, ActorCritic& to) {
  torch::NoGradGuard no_grad;
  auto src = from->parameters(), dst = to->parameters();
  TORCH_CHECK(src.size() == dst.size(), "copy_parameters: architectures differ");
  for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
}

bool parameters_finite(ActorCritic& net) {
  torch::NoGradGuard no_grad;
  for (const auto& p : net->parameters()) {
    if (!torch::isfinite(p).all().item<bool>()) return false;
  }
  return true;
}

torch::Tensor action_log_prob(const torch::Tensor& logits, const torch::Tensor& actions) {
  return torch::log_softmax(logits, -1).gather(-1, actions.unsqueeze(-1)).squeeze(-1);
}

torch::Tensor entropy(const torch::Tensor& logits) {
  auto logp = torch::log_softmax(logits, -1);
  return -(logp.exp() * logp).sum(-1);
}

torch::Tensor kl_to(const torch::Tensor& logits, const torch::Tensor& ref_log_probs) {
  auto logp = torch::log_softmax(logits, -1);
  return (logp.exp() * (logp - ref_log_probs)).sum(-1);
}

}  // namespace dynamix
