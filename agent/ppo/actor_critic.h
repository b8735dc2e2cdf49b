// DYNAMIX — actor-critic with weights shared across ranks: one MLP per rank row, pooled context.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace dynamix {

struct PolicyOutput {
  torch::Tensor logits;  // [T, N, A]
  torch::Tensor value;   // [T]
};

// Row i of the actor input is [x_i ‖ mean_j x_j ‖ max_j x_j ‖ g]; the critic reads [mean ‖ max ‖ g].
// Pooling is symmetric, so permuting ranks permutes the logits and leaves the value unchanged,
// and the same weights serve any number of ranks. `mask` ([T, N] bool, true = real rank) lets
// rollouts of different cluster sizes share one padded batch.
class ActorCriticImpl : public torch::nn::Module {
 public:
  ActorCriticImpl(int64_t node_dim, int64_t global_dim, const std::vector<int64_t>& hidden, int64_t actions,
                  uint64_t seed);
  PolicyOutput forward(const torch::Tensor& node, const torch::Tensor& global,
                       const torch::Tensor& mask = {});
  // The same with the pooled context given ([T, 2F], from pool() over every rank), so a transition
  // can keep a subset of its ranks' rows (node: [T, R, F]) and still see the whole cluster.
  PolicyOutput forward_rows(const torch::Tensor& node, const torch::Tensor& pooled, const torch::Tensor& global);
  // [mean_j x_j ‖ max_j x_j] over the real ranks: [T, 2F].
  static torch::Tensor pool(const torch::Tensor& node, const torch::Tensor& mask = {});

  // Sets the policy head's output bias (one logit offset per action): the untrained policy's prior.
  void set_action_bias(const std::vector<float>& bias);

  int64_t node_dim() const { return node_dim_; }
  int64_t global_dim() const { return global_dim_; }
  int64_t actions() const { return actions_; }

 private:
  int64_t node_dim_, global_dim_, actions_;
  torch::nn::Sequential actor_{nullptr}, critic_{nullptr};
};
TORCH_MODULE(ActorCritic);

// Copies every parameter of `from` into `to` (same architecture), without autograd.
void copy_parameters(ActorCritic& from, ActorCritic& to);
bool parameters_finite(ActorCritic& net);

// log pi(a_i | s) per rank: [T, N] (padding included; mask it).
torch::Tensor rank_log_prob(const torch::Tensor& logits, const torch::Tensor& actions);
// Mean over real ranks of the per-rank entropy (independent of the cluster size). [T]
torch::Tensor mean_entropy(const torch::Tensor& logits, const torch::Tensor& mask);

}  // namespace dynamix
