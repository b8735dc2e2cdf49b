// DYNAMIX — a small TorchScript module built in C++ (no Python needed), as torch.jit.script would
// write it, for tests of TorchScript models and of BatchNorm buffers: Linear 4 -> 3 and a
// BatchNorm over the 3 outputs (running_mean, running_var, num_batches_tracked); forward(x, y=None)
// returns the logits, or the mean cross-entropy of targets y.
#pragma once

#include <torch/script.h>

#include <string>

namespace dynamix::testing {

// An empty scripted module, with the `training` flag every nn.Module has.
inline torch::jit::Module scripted_module(const std::string& name) {
  torch::jit::Module m(name);
  m.register_attribute("training", c10::BoolType::get(), true);
  return m;
}

inline torch::jit::Module scripted_bn_net() {
  torch::jit::Module lin = scripted_module("Lin"), bn = scripted_module("Bn"), net = scripted_module("Net");
  // Parameters require gradients, as torch.nn.Parameter's do.
  lin.register_parameter("weight", torch::randn({3, 4}).requires_grad_(), false);
  lin.register_parameter("bias", torch::zeros({3}).requires_grad_(), false);
  bn.register_parameter("weight", torch::ones({3}).requires_grad_(), false);
  bn.register_parameter("bias", torch::zeros({3}).requires_grad_(), false);
  bn.register_buffer("running_mean", torch::zeros({3}));
  bn.register_buffer("running_var", torch::ones({3}));
  bn.register_buffer("num_batches_tracked", torch::zeros({}, torch::kInt64));
  net.register_module("lin", lin);
  net.register_module("bn", bn);
  net.define(R"(
def forward(self, x, y: Optional[Tensor] = None):
    h = torch.linear(x, self.lin.weight, self.lin.bias)
    if self.training:
        self.bn.num_batches_tracked.add_(1)
    h = torch.batch_norm(h, self.bn.weight, self.bn.bias, self.bn.running_mean, self.bn.running_var,
                         self.training, 0.1, 1e-5, False)
    if y is None:
        return h
    return torch.cross_entropy_loss(h, y)
)");
  return net;
}

}  // namespace dynamix::testing
