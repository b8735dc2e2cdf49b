// DYNAMIX — the one place that builds a device communicator.
#include "framework/cli/make_communicator.h"

#include <mpi.h>

#include "framework/core/error.h"
#if DYNAMIX_HAVE_NCCL
#include "framework/comm/nccl_communicator.h"
#endif

namespace dynamix {

std::unique_ptr<Communicator> make_device_communicator(Backend backend, int device_index) {
  if (backend != Backend::kNccl) return nullptr;
#if DYNAMIX_HAVE_NCCL
  return std::make_unique<NcclCommunicator>(MPI_COMM_WORLD, device_index);
#else
  (void)device_index;
  throw Error("backend: nccl, but this build has no NCCL (built without the CUDA toolkit); use backend: mpi");
#endif
}

}  // namespace dynamix
