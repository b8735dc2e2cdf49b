// DYNAMIX — shared-weight actor-critic; orthogonal init from a private generator (no global RNG).
#include "agent/ppo/actor_critic.h"

#include <Eigen/QR>
#include <cmath>

#include "framework/core/random.h"

namespace dynamix {
namespace {

// Orthogonal init (Saxe et al.) with the given gain, as CleanRL's layer_init; bias 0. The same
// weights on every x86-64 CPU: normals from our Rng and Eigen's Householder QR in double, where
// LibTorch's randn and linalg_qr take CPU-dispatched kernels (AVX2/AVX-512, OpenBLAS per core
// type) whose last bits differ, and `agent pretrain --seed 1` must rebuild the shipped policy bit
// for bit on any machine.
torch::nn::Linear make_linear(int64_t in, int64_t out, double gain, Rng& rng) {
  torch::nn::Linear layer(in, out);
  torch::NoGradGuard no_grad;
  const Eigen::Index rows = std::max(in, out), cols = std::min(in, out);
  Eigen::MatrixXd a(rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i) {
    for (Eigen::Index j = 0; j < cols; ++j) a(i, j) = rng.normal();
  }
  const Eigen::HouseholderQR<Eigen::MatrixXd> qr(a);
  Eigen::MatrixXd q = qr.householderQ() * Eigen::MatrixXd::Identity(rows, cols);
  for (Eigen::Index j = 0; j < cols; ++j) {
    if (qr.matrixQR()(j, j) < 0) q.col(j) *= -1;  // unique Q: R's diagonal positive
  }
  // weight is [out, in], row-major: Q itself when out >= in, else its transpose.
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  RowMajor w =
      out >= in ? RowMajor((q * gain).cast<float>()) : RowMajor((q.transpose() * gain).cast<float>());
  layer->weight.copy_(torch::from_blob(w.data(), {out, in}, torch::kFloat));
  layer->bias.zero_();
  return layer;
}

torch::nn::Sequential make_mlp(int64_t in, const std::vector<int64_t>& hidden, int64_t out, double out_gain,
                               Rng& gen) {
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
  Rng gen(seed);
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
