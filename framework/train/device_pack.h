// DYNAMIX — GradBuckets' packing for buckets on a CUDA device: the kernels of kernels/cuda (one
// launch per bucket) on the legacy default stream, which is LibTorch's default stream and the
// NCCL communicator's compute stream. Squared norms accumulate in two device doubles that
// norms() reads once per step.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/bucket_pack.h"

namespace dynamix {

class DevicePacker {
 public:
  // Throws dynamix::Error when this build has no CUDA kernels.
  explicit DevicePacker(const torch::Device& device);
  ~DevicePacker();
  DevicePacker(const DevicePacker&) = delete;
  DevicePacker& operator=(const DevicePacker&) = delete;

  // Zeroes the norm accumulators (start of a step).
  void begin();
  // Bucket `key`: bucket[off_k + j] = scale * src_k[j]; local norm += |src|^2. The segment table
  // is uploaded again only when the gradients' addresses or the layout changed.
  template <typename T>
  void pack(size_t key, const std::vector<kernels::Segment<T>>& segments, T scale, T* bucket);
  // dst_k[j] = bucket[off_k + j]; global norm += |bucket|^2.
  template <typename T>
  void unpack(size_t key, const T* bucket, const std::vector<kernels::Segment<T>>& segments);
  // One gradient as backward produces it (overlap): `slot` (a view of the bucket laid out like
  // `grad`) = scale * grad; local norm += |grad|^2. Safe on autograd's device thread.
  void pack_one(const torch::Tensor& grad, double scale, torch::Tensor slot);
  // The buckets were rebuilt: forget the cached tables.
  void clear_layouts();
  // {local, global} squared norms since begin(); waits for the device.
  std::pair<double, double> norms();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dynamix
