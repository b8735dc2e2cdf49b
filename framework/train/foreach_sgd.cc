// DYNAMIX — SGD over lists of tensors (foreach_sgd.h).
#include "framework/train/foreach_sgd.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <vector>

#include "framework/core/optimizer_state.h"

namespace dynamix {
namespace {

using torch::optim::SGDOptions;
using torch::optim::SGDParamState;
using TensorVec = std::vector<at::Tensor>;

// The momentum buffers of `params`, in order. A parameter without one yet gets a copy of its
// update, as LibTorch's SGD does on a parameter's first step; `fresh[i]` says so.
TensorVec momentum_buffers(torch::optim::Optimizer& opt, const TensorVec& params, const TensorVec& updates,
                           std::vector<bool>& fresh) {
  auto& state = opt.state();
  TensorVec bufs;
  bufs.reserve(params.size());
  fresh.assign(params.size(), false);
  for (size_t i = 0; i < params.size(); ++i) {
    const auto key = optimizer_state_key(opt, params[i]);
    auto it = state.find(key);
    if (it == state.end()) {
      auto s = std::make_unique<SGDParamState>();
      s->momentum_buffer(torch::clone(updates[i]).detach());
      bufs.push_back(s->momentum_buffer());
      state[key] = std::move(s);
      fresh[i] = true;
    } else {
      bufs.push_back(static_cast<SGDParamState&>(*it->second).momentum_buffer());
    }
  }
  return bufs;
}

// buf = momentum * buf + (1 - dampening) * update, for the buffers that existed before this step.
void accumulate_momentum(const TensorVec& bufs, const TensorVec& updates, const std::vector<bool>& fresh,
                         double momentum, double dampening) {
  TensorVec old_bufs, old_updates;
  for (size_t i = 0; i < bufs.size(); ++i) {
    if (fresh[i]) continue;
    old_bufs.push_back(bufs[i]);
    old_updates.push_back(updates[i]);
  }
  if (old_bufs.empty()) return;
  at::_foreach_mul_(old_bufs, momentum);
  at::_foreach_add_(old_bufs, old_updates, 1 - dampening);
}

void step_group(torch::optim::Optimizer& opt, torch::optim::OptimizerParamGroup& group) {
  const auto& o = static_cast<const SGDOptions&>(group.options());
  TensorVec params, updates;
  for (auto& p : group.params()) {
    if (!p.grad().defined()) continue;
    params.push_back(p);
    updates.push_back(p.grad());
  }
  if (params.empty()) return;
  if (o.weight_decay() != 0) updates = at::_foreach_add(updates, params, o.weight_decay());
  if (o.momentum() != 0) {
    std::vector<bool> fresh;
    TensorVec bufs = momentum_buffers(opt, params, updates, fresh);
    accumulate_momentum(bufs, updates, fresh, o.momentum(), o.dampening());
    updates = o.nesterov() ? at::_foreach_add(updates, bufs, o.momentum()) : bufs;
  }
  at::_foreach_add_(params, updates, -1 * o.lr());
}

}  // namespace

torch::Tensor ForeachSgd::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups()) step_group(*this, group);
  return loss;
}

}  // namespace dynamix
