// DYNAMIX — ResNet-18/34/50/101 with the torchvision layout and an ImageNet or CIFAR stem.
#pragma once

#include "models/model.h"

namespace dynamix {

// depth in {18, 34, 50, 101}; spec.input_shape is {C,H,W}. The stem is the ImageNet one
// (7x7 stride-2 conv + 3x3 max pool) when H >= 64 and cifar_stem is false, else a 3x3 stride-1 conv.
ModelPtr make_resnet(int depth, bool cifar_stem, const ModelSpec& spec);

}  // namespace dynamix
