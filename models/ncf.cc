// DYNAMIX — NeuMF.
#include "models/ncf.h"

#include "framework/core/error.h"

namespace dynamix {

namespace nn = torch::nn;

Ncf::Ncf(int64_t users, int64_t items, int64_t dim, int64_t num_classes) {
  gmf_user_ = register_module("gmf_user", nn::Embedding(users, dim));
  gmf_item_ = register_module("gmf_item", nn::Embedding(items, dim));
  mlp_user_ = register_module("mlp_user", nn::Embedding(users, dim));
  mlp_item_ = register_module("mlp_item", nn::Embedding(items, dim));
  fc1_ = register_module("fc1", nn::Linear(2 * dim, dim));
  fc2_ = register_module("fc2", nn::Linear(dim, dim / 2));
  out_ = register_module("out", nn::Linear(dim + dim / 2, num_classes));
  // Small embeddings, as in the paper (normal, std 0.01).
  torch::NoGradGuard no_grad;
  for (auto* e : {&gmf_user_, &gmf_item_, &mlp_user_, &mlp_item_}) (*e)->weight.normal_(0.0, 0.01);
}

torch::Tensor Ncf::forward(torch::Tensor x) {
  DYNAMIX_CHECK(x.dim() == 2 && x.size(1) == 2 && x.scalar_type() == torch::kLong,
                "ncf expects int64 (user, item) pairs [N, 2]");
  const auto user = x.select(1, 0), item = x.select(1, 1);
  const auto gmf = gmf_user_->forward(user) * gmf_item_->forward(item);
  auto mlp = torch::cat({mlp_user_->forward(user), mlp_item_->forward(item)}, 1);
  mlp = torch::relu(fc2_->forward(torch::relu(fc1_->forward(mlp))));
  return out_->forward(torch::cat({gmf, mlp}, 1));
}

}  // namespace dynamix
