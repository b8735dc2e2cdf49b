// DYNAMIX — copies a loaded batch to the GPU on the prefetch thread, on a CUDA stream of its own,
// and waits for the copy there. The training step then finds its inputs already on the device,
// and the copy overlapped the previous step's kernels instead of queueing behind them on the
// default stream (where a non-blocking copy from pinned memory would go).
#pragma once

#include <torch/torch.h>

#include "datasets/dataset.h"

namespace dynamix {

class BatchUploader {
 public:
  explicit BatchUploader(const torch::Device& device);
  ~BatchUploader();
  BatchUploader(const BatchUploader&) = delete;
  BatchUploader& operator=(const BatchUploader&) = delete;

  // `batch` on the host (pinned for a truly asynchronous copy) -> the same batch on the device.
  // One thread at a time (the prefetcher's).
  Batch upload(Batch batch);

 private:
  torch::Tensor to_device(const torch::Tensor& host);

  torch::Device device_;
  void* stream_ = nullptr;  // cudaStream_t (non-blocking) when built with the CUDA toolkit
};

}  // namespace dynamix
