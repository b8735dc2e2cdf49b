// DYNAMIX — device placement and backend choice.
#include "framework/train/device.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "framework/core/error.h"

namespace dynamix {
namespace {

int cuda_devices() { return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0; }

}  // namespace

bool nccl_built() {
#if DYNAMIX_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

Placement resolve_placement(const Config& config, int local_rank, int local_size) {
  const std::string& want = config.train.device;
  const int devices = cuda_devices();
  Placement out;
  if (want == "cuda" || (want == "auto" && devices > 0)) {
    if (devices == 0) {
      throw Error(std::string("train.device: cuda, but ") +
                  (at::hasCUDA() ? "LibTorch sees no CUDA device (driver, CUDA_VISIBLE_DEVICES?)"
                                 : "this LibTorch is built without CUDA") +
                  "; use train.device: cpu or auto");
    }
    out.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank % devices));
  } else if (want != "cpu" && want != "auto") {
    throw Error("train.device: unknown device '" + want + "' (auto | cpu | cuda)");
  }
  const bool cuda = out.device.is_cuda();
  if (config.train.precision == "fp16" && !cuda) {
    throw Error("train.precision: fp16 needs a CUDA device (this rank trains on the CPU); use bf16 or fp32");
  }
  if (cuda && !config.hetero.memory_mb.empty()) {
    throw Error("hetero.memory_mb: the emulated memory cap applies to CPU training only; on a GPU the "
                "device's own memory is the limit (share a GPU between ranks to make it smaller)");
  }

  const std::string& backend = config.backend;
  const bool own_gpu = cuda && local_size <= devices;
  if (backend == "nccl") {
    if (!cuda) throw Error("backend: nccl needs train.device: cuda (this rank trains on the CPU); use mpi");
    if (!nccl_built()) throw Error("backend: nccl, but this build has no NCCL (CUDA toolkit not found at configure time)");
    if (!own_gpu) {
      throw Error("backend: nccl needs one GPU per rank, but " + std::to_string(local_size) +
                  " ranks share this node's " + std::to_string(devices) +
                  " GPU(s); use backend: mpi (ranks may share a GPU) or start fewer ranks per node");
    }
    out.backend = "nccl";
  } else if (backend == "auto") {
    out.backend = own_gpu && nccl_built() ? "nccl" : "mpi";
  } else if (backend == "mpi") {
    out.backend = "mpi";
  } else {
    throw Error("backend: unknown backend '" + backend + "' (auto | nccl | mpi)");
  }
  return out;
}

void make_device_current(const torch::Device& device) {
  if (!device.is_cuda()) return;
  c10::impl::getDeviceGuardImpl(device.type())->setDevice(device);
}

void synchronize_device(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace dynamix
