// DYNAMIX — device placement and backend choice.
#include "framework/train/device.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/host.h"

#if DYNAMIX_HAVE_CUDA_TOOLKIT
#include <cuda_runtime_api.h>
#endif

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

int loader_workers(int configured, const torch::Device& device) {
  if (configured > 0) return configured;
  return device.is_cuda() ? std::clamp(torch::get_num_threads(), 1, 8) : 1;
}

torch::Device choose_device(const Config& config, int gpu_slot) {
  const DeviceChoice want = config.train.device;
  const int devices = cuda_devices();
  torch::Device device = torch::kCPU;
  if (want == DeviceChoice::kCuda || (want == DeviceChoice::kAuto && devices > 0)) {
    if (devices == 0) {
      throw Error(std::string("train.device: cuda, but ") +
                  (at::hasCUDA() ? "LibTorch sees no CUDA device (driver, CUDA_VISIBLE_DEVICES?)"
                                 : "this LibTorch is built without CUDA") +
                  "; use train.device: cpu or auto");
    }
    device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(gpu_slot % devices));
  }
  if (config.train.precision == Precision::kFp16 && !device.is_cuda()) {
    throw Error("train.precision: fp16 needs a CUDA device (this rank trains on the CPU); use bf16 or fp32");
  }
  if (device.is_cuda() && !config.hetero.memory_mb.empty()) {
    throw Error(
        "hetero.memory_mb: the emulated memory cap applies to CPU training only; on a GPU the "
        "device's own memory is the limit (share a GPU between ranks to make it smaller)");
  }
  return device;
}

Backend choose_backend(const Config& config, const torch::Device& device, bool gpu_shared) {
  if (config.backend == Backend::kAuto) {
    return device.is_cuda() && nccl_built() && !gpu_shared ? Backend::kNccl : Backend::kMpi;
  }
  if (config.backend == Backend::kMpi) return Backend::kMpi;
  if (!device.is_cuda())
    throw Error("backend: nccl needs train.device: cuda (this rank trains on the CPU); use mpi");
  if (!nccl_built())
    throw Error("backend: nccl, but this build has no NCCL (CUDA toolkit not found at configure time)");
  if (gpu_shared) {
    throw Error("backend: nccl needs a GPU per rank, but ranks of this node share " + device.str() + " (" +
                device_bus_id(device) +
                "); use backend: mpi (ranks may share a GPU) or start fewer ranks per node");
  }
  return Backend::kNccl;
}

std::string device_bus_id(const torch::Device& device) {
  if (!device.is_cuda()) return "cpu";
#if DYNAMIX_HAVE_CUDA_TOOLKIT
  char id[64] = {};
  if (cudaDeviceGetPCIBusId(id, sizeof(id), device.index()) == cudaSuccess) return id;
  cudaGetLastError();  // clear it; fall back to the index
#endif
  return device.str();
}

// GPUs are told apart by PCI bus id: under per-task binding every rank sees its own GPU as device 0.
bool ranks_share_a_gpu(Communicator& comm, const torch::Device& device) {
  constexpr size_t kLen = 192;
  char mine[kLen] = {};
  if (device.is_cuda()) {
    std::snprintf(mine, kLen, "%s|%s", host_name().c_str(), device_bus_id(device).c_str());
  }
  std::vector<char> all(kLen * static_cast<size_t>(comm.size()));
  comm.allgather(mine, kLen, all.data());
  std::set<std::string> seen;
  for (int r = 0; r < comm.size(); ++r) {
    const std::string id(&all[static_cast<size_t>(r) * kLen]);
    if (!id.empty() && !seen.insert(id).second) return true;
  }
  return false;
}

void make_device_current(const torch::Device& device) {
  if (!device.is_cuda()) return;
  c10::impl::getDeviceGuardImpl(device.type())->setDevice(device);
}

void synchronize_device(const torch::Device& device) {
  if (!device.is_cuda()) return;
#if DYNAMIX_HAVE_CUDA_TOOLKIT
  // The legacy default stream only: the step's kernels (and the collectives they wait for), not
  // the NCCL stream's later buckets or the upload stream's next batch, as cudaDeviceSynchronize
  // (torch::cuda::synchronize) would.
  make_device_current(device);
  const cudaError_t e = cudaStreamSynchronize(cudaStreamLegacy);
  if (e != cudaSuccess) throw Error(std::string("cudaStreamSynchronize: ") + cudaGetErrorString(e));
#else
  torch::cuda::synchronize(device.index());
#endif
}

}  // namespace dynamix
