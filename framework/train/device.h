// DYNAMIX — where a rank trains (train.device: auto | cpu | cuda) and over which backend its
// gradients travel (backend: auto | nccl | mpi).
//
// cuda: the node-local rank's GPU, local_rank % devices, so several ranks may share one GPU
// (MPS splits it for real compute heterogeneity); NCCL refuses that, so `auto` picks NCCL only
// when every local rank has a GPU of its own, and MPI otherwise (GradBuckets then stages the
// buckets through pinned host memory).
#pragma once

#include <torch/torch.h>

#include <string>

#include "framework/config/config.h"

namespace dynamix {

struct Placement {
  torch::Device device = torch::kCPU;
  std::string backend = "mpi";  // "mpi" | "nccl"
};

// Resolves the configuration for the rank with node-local rank `local_rank` of `local_size`.
// Throws dynamix::Error naming the key when the request cannot be met (no CUDA device, NCCL not
// built, more ranks than GPUs with nccl, fp16 on a CPU, ...).
Placement resolve_placement(const Config& config, int local_rank, int local_size);

// Whether this build has the NCCL communicator and the CUDA kernels.
bool nccl_built();

// Makes `device` the current CUDA device of the calling thread (raw CUDA calls and NCCL follow
// it; LibTorch ops follow their tensors). No-op for a CPU device.
void make_device_current(const torch::Device& device);

// Waits until the device's queued work is done (timing on GPUs); no-op for a CPU device.
void synchronize_device(const torch::Device& device);

}  // namespace dynamix
