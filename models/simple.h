// DYNAMIX — small image classifiers: the Fashion-MNIST CNN and an MLP.
#pragma once

#include "models/model.h"

namespace dynamix {

// conv3x3(C->32)+ReLU, maxpool2, conv3x3(32->64)+ReLU, maxpool2, fc 128+ReLU, fc classes.
// No BatchNorm and no dropout: the output depends only on the weights and the input.
class Cnn : public Model {
 public:
  Cnn(int64_t channels, int64_t height, int64_t width, int64_t num_classes);
  torch::Tensor forward(torch::Tensor x) override;

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
};

// flatten -> 256 -> ReLU -> 128 -> ReLU -> classes.
class Mlp : public Model {
 public:
  Mlp(int64_t in_features, int64_t num_classes);
  torch::Tensor forward(torch::Tensor x) override;

 private:
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr}, fc3_{nullptr};
};

}  // namespace dynamix
