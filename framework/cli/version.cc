// DYNAMIX — the version line.
#include "framework/cli/version.h"

#include <torch/version.h>  // the version macros only, not the LibTorch API

namespace dynamix {

std::string version_text() {
#if DYNAMIX_HAVE_CUDA_TOOLKIT
  const char* kernels = "built";
#else
  const char* kernels = "not built";
#endif
  const char* libtorch = DYNAMIX_CUDA_LIBTORCH ? "with CUDA" : "CPU only";
  return std::string("dynamix ") + DYNAMIX_VERSION + " (LibTorch " + TORCH_VERSION + " headers, " + libtorch +
         "; CUDA kernels and NCCL: " + kernels + ")";
}

}  // namespace dynamix
