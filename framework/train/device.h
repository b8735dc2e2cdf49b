// DYNAMIX — where a rank trains (train.device: auto | cpu | cuda) and over which backend its
// gradients travel (backend: auto | nccl | mpi).
//
// cuda: the GPU placement chose (framework/train/placement.h: spread over NUMA nodes), else the
// node-local rank's, local_rank % visible GPUs — so several ranks may share one GPU
// (MPS splits it for real compute heterogeneity), and under per-task GPU binding (Slurm
// --gpus-per-task, CUDA_VISIBLE_DEVICES per rank) every rank takes its own device 0. NCCL refuses
// two ranks on one GPU, so `auto` picks NCCL only when no two ranks of a node share a GPU (told
// apart by PCI bus id), and MPI otherwise (GradBuckets then stages buckets through pinned memory).
#pragma once

#include <torch/torch.h>

#include <string>

#include "framework/comm/communicator.h"
#include "framework/config/config.h"

namespace dynamix {

// The device of a rank: for cuda, GPU `gpu_slot` modulo the visible GPUs (the slot placement chose,
// placement.h, else the node-local rank). Throws dynamix::Error naming the key when the request
// cannot be met (no CUDA device, fp16 on a CPU, hetero.memory_mb on a GPU).
torch::Device choose_device(const Config& config, int gpu_slot);

// The backend for a rank on `device`; `gpu_shared`: another rank of the node uses the same GPU.
// Throws dynamix::Error for nccl without a GPU, without NCCL in the build, or on a shared GPU.
// The answer is kNccl or kMpi.
Backend choose_backend(const Config& config, const torch::Device& device, bool gpu_shared);

// Whether two ranks of one node train on the same GPU (collective over `comm`; NCCL refuses two
// ranks on one GPU).
bool ranks_share_a_gpu(Communicator& comm, const torch::Device& device);

// A name for the physical device: the PCI bus id of a GPU ("0000:3B:00.0"; "cuda:N" without the
// CUDA toolkit in the build), "cpu" otherwise.
std::string device_bus_id(const torch::Device& device);

// Whether this build has the NCCL communicator and the CUDA kernels.
bool nccl_built();

// Threads that load a training batch (dataset.workers; 0 = auto, see DatasetConfig::workers).
int loader_workers(int configured, const torch::Device& device);

// Makes `device` the current CUDA device of the calling thread (raw CUDA calls and NCCL follow
// it; LibTorch ops follow their tensors). No-op for a CPU device.
void make_device_current(const torch::Device& device);

// Waits until the work queued on the device's default stream (the training step's kernels) is
// done; no-op for a CPU device.
void synchronize_device(const torch::Device& device);

}  // namespace dynamix
