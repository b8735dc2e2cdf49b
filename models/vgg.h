// DYNAMIX — VGG-11/13/16/19, with or without BatchNorm, with an ImageNet or CIFAR head.
#pragma once

#include "models/model.h"

namespace dynamix {

// depth in {11, 13, 16, 19}; spec.input_shape is {C,H,W} with H, W >= 32 (five 2x2 pools).
// Head: torchvision's (7x7 average pool, 4096-4096-classes with dropout) when H >= 64 and
// cifar_head is false, else global average pool + linear 512 -> classes.
ModelPtr make_vgg(int depth, bool batch_norm, bool cifar_head, const ModelSpec& spec);

}  // namespace dynamix
