// DYNAMIX tests — why a CUDA test cannot run on this machine.
#pragma once

#include <torch/torch.h>

#include <string>

namespace dynamix::testing {

// Empty where LibTorch sees a CUDA device; otherwise the reason, for GTEST_SKIP.
inline std::string why_no_cuda() {
  if (torch::cuda::is_available()) return {};
  return at::hasCUDA() ? "no CUDA device visible to LibTorch" : "this LibTorch is built without CUDA";
}

}  // namespace dynamix::testing
