// DYNAMIX — where LibTorch's optimizers keep a parameter's state. The key is the parameter's
// TensorImpl address: printed as a string in LibTorch 1.13, the pointer itself in 2.x. Header-only:
// its users link LibTorch, dynamix_core does not.
#pragma once

#include <torch/optim/optimizer.h>

#include <sstream>
#include <string>
#include <type_traits>

namespace dynamix {

// The key of `param`'s entry in `optimizer.state()`, in whichever form this LibTorch uses (a
// template so that the other form's branch is discarded).
template <class Opt>
auto optimizer_state_key(const Opt& optimizer, const at::Tensor& param) {
  using Key = typename std::decay_t<decltype(optimizer.state())>::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream os;  // as c10::guts::to_string, which LibTorch 1.13 uses
    os << param.unsafeGetTensorImpl();
    return os.str();
  } else {
    return static_cast<Key>(param.unsafeGetTensorImpl());
  }
}

}  // namespace dynamix
