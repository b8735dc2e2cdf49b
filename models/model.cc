// DYNAMIX — helpers shared by every model.
#include "models/model.h"

#include "framework/core/error.h"

namespace dynamix {

torch::Tensor Model::forward_loss(torch::Tensor, torch::Tensor) {
  throw Error(
      "this model has no loss of its own (train.loss: module needs a model whose forward(x, y) "
      "returns it, e.g. model: torchscript:PATH)");
}

int64_t count_parameters(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

}  // namespace dynamix
