// DYNAMIX — batch upload on a copy stream.
#include "framework/train/batch_uploader.h"

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
  // Non-blocking: no implicit synchronization with the legacy default stream the step runs on.
  DYNAMIX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  stream_ = stream;
#endif
}

BatchUploader::~BatchUploader() {
#if DYNAMIX_HAVE_CUDA_TOOLKIT
  if (stream_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
#endif
}

torch::Tensor BatchUploader::to_device(const torch::Tensor& host) {
  if (!host.defined() || host.device() == device_) return host;
#if DYNAMIX_HAVE_CUDA_TOOLKIT
  const torch::Tensor src = host.contiguous();
  // Allocated on the default stream (the caching allocator's bookkeeping), written on ours, and
  // complete before the step can use or free it: upload() waits for the copy.
  torch::Tensor dst = torch::empty(src.sizes(), src.options().device(device_).pinned_memory(false));
  DYNAMIX_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), src.nbytes(), cudaMemcpyHostToDevice,
                                     static_cast<cudaStream_t>(stream_)));
  return dst;
#else
  return host.to(device_);
#endif
}

Batch BatchUploader::upload(Batch batch) {
  make_device_current(device_);
  Batch out{to_device(batch.inputs), to_device(batch.targets)};
#if DYNAMIX_HAVE_CUDA_TOOLKIT
  // The host tensors (pinned) stay alive in `batch` until the copy is done.
  DYNAMIX_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)));
#endif
  return out;
}

}  // namespace dynamix
