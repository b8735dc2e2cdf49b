// DYNAMIX — test helper: a few optimizer steps on one fixed batch, returning first and last loss.
#pragma once

#include <torch/torch.h>

#include <utility>

#include "models/model.h"

namespace dynamix {
namespace testing {

// Cross-entropy over the last dim of the logits; targets hold class ids (-100 is ignored).
inline torch::Tensor logits_loss(const torch::Tensor& logits, const torch::Tensor& target) {
  return torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), target.reshape({-1}));
}

// Runs `steps` updates of `opt` on (x, y); returns the loss before the first and after the last.
inline std::pair<double, double> fit_batch(Model& model, torch::optim::Optimizer& opt, const torch::Tensor& x,
                                           const torch::Tensor& y, int steps) {
  model.train();
  double first = 0.0;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    torch::Tensor loss = logits_loss(model.forward(x), y);
    if (s == 0) first = loss.item<double>();
    loss.backward();
    opt.step();
  }
  torch::NoGradGuard no_grad;
  return {first, logits_loss(model.forward(x), y).item<double>()};
}

}  // namespace testing
}  // namespace dynamix
