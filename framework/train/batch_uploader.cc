// DYNAMIX — batch upload on a copy stream.
#include "framework/train/batch_uploader.h"

#include <algorithm>

#include "framework/core/error.h"
#include "framework/train/device.h"

#if DYNAMIX_HAVE_CUDA_TOOLKIT
#include <cuda_runtime_api.h>

#include "framework/comm/cuda_check.h"
#endif

namespace dynamix {

BatchUploader::BatchUploader(const torch::Device& device) : device_(device) {
  DYNAMIX_CHECK(device.is_cuda(), "BatchUploader: not a CUDA device");
#if DYNAMIX_HAVE_CUDA_TOOLKIT
  CudaDeviceGuard guard(device.index());
  cudaStream_t stream = nullptr;
  cudaEvent_t event = nullptr;
  // Non-blocking: no implicit synchronization with the legacy default stream the step runs on.
  DYNAMIX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  stream_ = stream;
  DYNAMIX_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  ready_ = event;
#endif
}

BatchUploader::~BatchUploader() {
#if DYNAMIX_HAVE_CUDA_TOOLKIT
  if (ready_ != nullptr) cudaEventDestroy(static_cast<cudaEvent_t>(ready_));
  if (stream_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
#endif
}

torch::Tensor BatchUploader::place(torch::Tensor& buffer, const torch::Tensor& host) {
  const int64_t n = host.numel();
  if (!buffer.defined() || buffer.scalar_type() != host.scalar_type() || buffer.numel() < n) {
    buffer = torch::Tensor();  // give the old block back first
    buffer = torch::empty({std::max<int64_t>(n, 1)},
                          torch::TensorOptions().dtype(host.scalar_type()).device(device_));
    grown_ = true;
  }
  return buffer.narrow(0, 0, n).view(host.sizes());
}

void BatchUploader::copy(const torch::Tensor& dst, const torch::Tensor& src) {
#if DYNAMIX_HAVE_CUDA_TOOLKIT
  DYNAMIX_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), src.nbytes(), cudaMemcpyHostToDevice,
                                     static_cast<cudaStream_t>(stream_)));
#else
  dst.copy_(src);
#endif
}

Batch BatchUploader::upload(Batch batch) {
  make_device_current(device_);
  const torch::Tensor inputs = batch.inputs.contiguous(), targets = batch.targets.contiguous();
  Buffers& slot = buffers_[next_];
  next_ ^= 1;
  grown_ = false;
  Batch out{place(slot.inputs, inputs), place(slot.targets, targets)};
#if DYNAMIX_HAVE_CUDA_TOOLKIT
  if (grown_) {
    // A fresh block may have been freed by the step in progress while its kernels are queued.
    const auto ready = static_cast<cudaEvent_t>(ready_);
    DYNAMIX_CUDA_CHECK(cudaEventRecord(ready, cudaStreamLegacy));
    DYNAMIX_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream_), ready, 0));
  }
#endif
  copy(out.inputs, inputs);
  copy(out.targets, targets);
#if DYNAMIX_HAVE_CUDA_TOOLKIT
  // The host tensors (pinned) stay alive until the copy is done.
  DYNAMIX_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)));
#endif
  return out;
}

}  // namespace dynamix
