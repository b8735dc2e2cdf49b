// DYNAMIX — copies a loaded batch to the GPU on the prefetch thread, on a CUDA stream of its own,
// and waits for the copy there. The training step then finds its inputs already on the device,
// and the copy overlapped the previous step's kernels instead of queueing behind them on the
// default stream (where a non-blocking copy from pinned memory would go).
//
// Device memory: two buffers of its own, used in turn, so the caching allocator never hands a
// block that kernels of the step in progress still use to this other stream. A buffer is written
// again two uploads later, when the step that read it has finished (the trainer consumes one
// prefetched batch per step and synchronizes within it). A buffer that grows comes from the
// allocator, so that copy first waits for the work already queued on the default stream.
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

  // `batch` on the host (pinned for a truly asynchronous copy) -> the same batch on the device,
  // valid until the upload after next. One thread at a time (the prefetcher's).
  Batch upload(Batch batch);

 private:
  struct Buffers {
    torch::Tensor inputs, targets;
  };
  // A device view for `host` in `buffer` (grown if needed); sets grown_ when it allocated.
  torch::Tensor place(torch::Tensor& buffer, const torch::Tensor& host);
  void copy(const torch::Tensor& dst, const torch::Tensor& src);

  torch::Device device_;
  Buffers buffers_[2];
  int next_ = 0;
  bool grown_ = false;
  void* stream_ = nullptr;  // cudaStream_t (non-blocking) when built with the CUDA toolkit
  void* ready_ = nullptr;   // cudaEvent_t: the default stream's queued work, for a grown buffer
};

}  // namespace dynamix
