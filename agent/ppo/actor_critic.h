// DYNAMIX — actor-critic with weights shared across ranks: one MLP per rank row, pooled context.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace dynamix {

struct PolicyOutput {
  torch::Tensor logits;  // [T, A]: one move for the whole cluster
  torch::Tensor value;   // [T]
};

// Per-rank feature rows are pooled symmetrically, [mean_j x_j ‖ max_j x_j], and joined with the
// global features; the actor and the critic read that context. Permuting ranks leaves the output
// unchanged (the plan permutes with the per-rank proposals the move is applied to), and the same
// weights serve any number of ranks. `mask` ([T, N] bool, true = real rank) lets rollouts of
// different cluster sizes share one padded batch.
class ActorCriticImpl : public torch::nn::Module {
 public:
  ActorCriticImpl(int64_t node_dim, int64_t global_dim, const std::vector<int64_t>& hidden, int64_t actions,
                  uint64_t seed);
  PolicyOutput forward(const torch::Tensor& node, const torch::Tensor& global,
                       const torch::Tensor& mask = {});
  // The same from the pooled rows ([T, 2F], from pool()): what a stored transition keeps.
  PolicyOutput forward_pooled(const torch::Tensor& pooled, const torch::Tensor& global);
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

// log pi(a | s): [T] for logits [T, A] and actions [T].
torch::Tensor action_log_prob(const torch::Tensor& logits, const torch::Tensor& actions);
// Entropy of each categorical: [T].
torch::Tensor entropy(const torch::Tensor& logits);
// KL(pi || ref) of each categorical against one reference distribution (log-probabilities [A]): [T].
torch::Tensor kl_to(const torch::Tensor& logits, const torch::Tensor& ref_log_probs);

}  // namespace dynamix
