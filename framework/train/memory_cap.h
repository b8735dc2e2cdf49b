// DYNAMIX — emulated device memory for heterogeneity experiments on one machine: a cap on the
// bytes of CPU tensors alive at once in this process, enforced by the allocator, so a batch too
// large for a "small device" fails where a real GPU would: inside forward or backward, with
// c10::OutOfMemoryError. Config: hetero.memory_mb (per rank, 0 = no cap).
#pragma once

#include <cstddef>

namespace dynamix {

// Installs the cap for the rest of the process (LibTorch's CPU allocator is global); a later
// call changes the limit. Tensors allocated before the first call are not counted.
void install_cpu_memory_cap(size_t bytes);

// Bytes currently counted against the cap (0 when none is installed).
size_t capped_bytes_in_use();

}  // namespace dynamix
