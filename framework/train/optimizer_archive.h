// DYNAMIX — an optimizer's per-parameter state read from the archive LibTorch's Optimizer::save
// writes, whichever LibTorch wrote it.
//
// That archive names each parameter by its TensorImpl address: LibTorch 1.13 prints it in hex
// ("0x55d4..."), 2.x in decimal, and 2.x's own Optimizer::load parses the names as decimal only.
// A checkpoint written by 1.13 then gave every parameter the name 0, and 2.x's load left null
// states behind that the first step dereferenced (seen on the GPU machine, RESULTS §17). This
// reader matches the names in either form and fills the state by parameter position. Group options
// are not read: the configuration and the lr schedule set them, as 1.13's load also left them.
#pragma once

#include <torch/optim/adamw.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>

namespace dynamix {

// Replaces the state of `optimizer`'s parameters that `archive` holds state for. State is the
// optimizer's ParamState type (torch::optim::SGDParamState, AdamWParamState). Throws
// dynamix::Error when the archive's groups do not match the optimizer's or a name is no address.
template <class State>
void load_param_states(torch::serialize::InputArchive& archive, torch::optim::Optimizer& optimizer);

// A LibTorch optimizer whose load() is the reader above, so that checkpoints move between
// LibTorch versions; everything else is Base's.
template <class Base, class State>
class PortableLoad : public Base {
 public:
  using Base::Base;
  void load(torch::serialize::InputArchive& archive) override { load_param_states<State>(archive, *this); }
};

// train.optimizer: adamw (LibTorch's, one parameter at a time). sgd is ForeachSgd (foreach_sgd.h).
using PortableAdamW = PortableLoad<torch::optim::AdamW, torch::optim::AdamWParamState>;

}  // namespace dynamix
