// DYNAMIX — what a training step minimizes and what evaluation measures (`train.loss`), chosen
// once at start-up: cross-entropy of the logits, mean squared error of the outputs against one-hot
// targets, or the model's own loss (a TorchScript forward(x, y)). Evaluation reports the same loss
// and, from the outputs' argmax, the accuracy (every data set here has class labels).
#pragma once

#include <torch/torch.h>

#include <memory>

#include "datasets/dataset.h"
#include "framework/config/config.h"
#include "models/model.h"

namespace dynamix {

class Objective {
 public:
  virtual ~Objective() = default;
  // The batch's mean loss, to run backward on (forward under train.precision and layout).
  virtual torch::Tensor loss(Model& model, const torch::Tensor& inputs, const torch::Tensor& targets) = 0;
  // Adds the batch's {loss x counted, correct, counted} to `sums`; targets -100 (MLM positions
  // that are not masked) are not counted.
  void evaluate(Model& model, const torch::Tensor& inputs, const torch::Tensor& targets, double sums[3]);

 protected:
  explicit Objective(const TrainConfig& train) : train_(train) {}
  // The loss summed over the counted targets, and the outputs whose argmax is the prediction.
  virtual std::pair<torch::Tensor, torch::Tensor> eval_loss_sum(Model& model, const torch::Tensor& inputs,
                                                                const torch::Tensor& targets) = 0;
  const TrainConfig& train_;
};

// The objective `train.loss` names, checked against the model and the data: `sample` (a batch of
// the data set, ready for the model) runs through the model once in eval mode, without gradients;
// inputs it does not take, outputs of the wrong shape (N x num_classes for classification,
// N x L x vocab for MLM) or a loss that is not a scalar throw dynamix::Error naming the model.
std::unique_ptr<Objective> make_objective(const TrainConfig& train, const std::string& model_name,
                                          Model& model, const Batch& sample, int64_t num_classes);

}  // namespace dynamix
