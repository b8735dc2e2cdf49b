// DYNAMIX — Neural Collaborative Filtering (NeuMF, He et al. 2017): a GMF branch (element-wise
// product of user and item embeddings) and an MLP branch over their concatenation, fused by one
// linear layer into click / no-click logits. Its gradients are mostly embedding rows that the
// batch did not touch, i.e. zeros: the workload the hlc codec targets (arXiv:2402.07529).
#pragma once

#include "models/model.h"

namespace dynamix {

class Ncf : public Model {
 public:
  Ncf(int64_t users, int64_t items, int64_t dim, int64_t num_classes);
  // x: int64 [N, 2] (user id, item id) -> logits [N, num_classes].
  torch::Tensor forward(torch::Tensor x) override;

 private:
  torch::nn::Embedding gmf_user_{nullptr}, gmf_item_{nullptr}, mlp_user_{nullptr}, mlp_item_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr}, out_{nullptr};
};

}  // namespace dynamix
