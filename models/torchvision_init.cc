// DYNAMIX — torchvision's weight initialisation for its CNNs.
#include "models/torchvision_init.h"

namespace dynamix {

void torchvision_init(torch::nn::Module& net, std::optional<double> linear_std) {
  namespace nn = torch::nn;
  torch::NoGradGuard no_grad;
  for (auto& m : net.modules(/*include_self=*/false)) {
    if (auto* c = m->as<nn::Conv2d>()) {
      nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
      if (c->bias.defined()) nn::init::zeros_(c->bias);
    } else if (auto* bn = m->as<nn::BatchNorm2d>()) {
      nn::init::ones_(bn->weight);
      nn::init::zeros_(bn->bias);
    } else if (auto* l = m->as<nn::Linear>(); l && linear_std) {
      nn::init::normal_(l->weight, 0.0, *linear_std);
      nn::init::zeros_(l->bias);
    }
  }
}

}  // namespace dynamix
