// DYNAMIX — the communicator gradients travel on, for `dynamix train` and `dynamix bench` alike.
#pragma once

#include <memory>

#include "framework/comm/communicator.h"
#include "framework/config/choices.h"

namespace dynamix {

// For backend nccl (choose_backend's answer) an NCCL communicator on CUDA device `device_index`:
// collective, every rank calls it, and every rank throws dynamix::Error if one cannot have its GPU
// or this build has no NCCL. For mpi: nullptr, the job's MPI communicator serves.
std::unique_ptr<Communicator> make_device_communicator(Backend backend, int device_index);

}  // namespace dynamix
