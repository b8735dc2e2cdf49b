// DYNAMIX — small image classifiers: the Fashion-MNIST CNN and an MLP.
#include "models/simple.h"

namespace dynamix {

namespace F = torch::nn::functional;

Cnn::Cnn(int64_t channels, int64_t height, int64_t width, int64_t num_classes) {
  // Padding 1 keeps the size through each conv; each pool halves it (floor), as the flatten below assumes.
  conv1_ = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, 32, 3).padding(1)));
  conv2_ = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3).padding(1)));
  const int64_t flat = 64 * (height / 4) * (width / 4);
  fc1_ = register_module("fc1", torch::nn::Linear(flat, 128));
  fc2_ = register_module("fc2", torch::nn::Linear(128, num_classes));
}

torch::Tensor Cnn::forward(torch::Tensor x) {
  x = F::max_pool2d(torch::relu(conv1_->forward(x)), F::MaxPool2dFuncOptions(2));
  x = F::max_pool2d(torch::relu(conv2_->forward(x)), F::MaxPool2dFuncOptions(2));
  x = torch::relu(fc1_->forward(x.flatten(1)));
  return fc2_->forward(x);
}

Mlp::Mlp(int64_t in_features, int64_t num_classes) {
  fc1_ = register_module("fc1", torch::nn::Linear(in_features, 256));
  fc2_ = register_module("fc2", torch::nn::Linear(256, 128));
  fc3_ = register_module("fc3", torch::nn::Linear(128, num_classes));
}

torch::Tensor Mlp::forward(torch::Tensor x) {
  x = torch::relu(fc1_->forward(x.flatten(1)));
  x = torch::relu(fc2_->forward(x));
  return fc3_->forward(x);
}

}  // namespace dynamix
