// DYNAMIX — what `dynamix --version` prints: the release, and what this binary was built against.
#pragma once

#include <string>

namespace dynamix {

// e.g. "dynamix 0.1.0 (LibTorch 1.13.0 headers, CPU only; CUDA kernels and NCCL: built)".
std::string version_text();

}  // namespace dynamix
