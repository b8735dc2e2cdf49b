// DYNAMIX — checks on tensors read from files (training checkpoints, policy files), one copy for
// every reader. Header-only: its users link LibTorch, dynamix_core does not.
#pragma once

#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>

#include <sstream>
#include <string>

namespace dynamix {

// "[2, 3] float": a tensor's shape and dtype, for error messages.
inline std::string tensor_layout(const at::Tensor& t) {
  std::ostringstream os;
  os << t.sizes() << " " << t.dtype();
  return os.str();
}

// True where elements share memory (a stride-0 view): a stored tensor can claim any size over one
// stored value (copying it out allocates all of it), and in-place updates of it fail.
inline bool is_broadcast_view(const at::Tensor& t) {
  return at::has_internal_overlap(t) == at::MemOverlap::Yes;
}

}  // namespace dynamix
