// DYNAMIX — SGD (momentum, dampening, Nesterov, weight decay) with one multi-tensor kernel per
// update term for all of a group's parameters, where LibTorch's C++ SGD launches a few kernels per
// parameter. PyTorch's own SGD does the same on CUDA by default (foreach=True); on a GPU the
// per-parameter launches cost milliseconds a step on a ResNet. Same arithmetic, same state
// (SGDParamState's momentum buffer under LibTorch's key), so checkpoints and torch::optim::SGD's
// save is unchanged; on the CPU the result is bit for bit LibTorch's. load reads either LibTorch's
// archive (optimizer_archive.h).
#pragma once

#include <torch/optim/sgd.h>

#include "framework/train/optimizer_archive.h"

namespace dynamix {

class ForeachSgd : public PortableLoad<torch::optim::SGD, torch::optim::SGDParamState> {
 public:
  using PortableLoad::PortableLoad;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace dynamix
