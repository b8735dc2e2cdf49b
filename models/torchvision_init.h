// DYNAMIX — torchvision's weight initialisation for its CNNs (ResNet, VGG), in one place.
#pragma once

#include <torch/torch.h>

#include <optional>

namespace dynamix {

// In module order: convs He-normal (fan-out, ReLU) with zero biases, BatchNorm at identity, and
// linears N(0, linear_std) with zero biases when linear_std is set (else LibTorch's default stays,
// as torchvision's ResNet leaves its fc).
void torchvision_init(torch::nn::Module& net, std::optional<double> linear_std);

}  // namespace dynamix
