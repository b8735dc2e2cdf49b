// DYNAMIX — bucket packing on CUDA devices.
#include "framework/train/device_pack.h"

#include <map>
#include <type_traits>

#include "framework/core/error.h"
#include "framework/train/device.h"

#if DYNAMIX_HAVE_CUDA_TOOLKIT
#include <cuda_runtime_api.h>

#include "framework/comm/cuda_check.h"
#include "kernels/cuda/bucket_pack_cuda.h"
#endif

namespace dynamix {

#if DYNAMIX_HAVE_CUDA_TOOLKIT

// Named, not anonymous: DevicePacker::Impl holds Tables, and an anonymous type in its fields is a
// -Wsubobject-linkage warning wherever a unity build includes this file.
namespace device_pack {

// The legacy default stream: LibTorch's default stream and NcclCommunicator's compute stream.
constexpr cudaStream_t kStream = nullptr;

template <typename T>
struct Table {
  kernels::gpu::DeviceSegments<T> device;
  std::vector<kernels::Segment<T>> uploaded;  // what the device copy holds
};

template <typename T>
bool same_layout(const std::vector<kernels::Segment<T>>& a, const std::vector<kernels::Segment<T>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].data != b[i].data || a[i].count != b[i].count || a[i].offset != b[i].offset) return false;
  }
  return true;
}

}  // namespace device_pack
using namespace device_pack;  // NOLINT(google-build-using-namespace): this file's own helpers

struct DevicePacker::Impl {
  torch::Device device;
  torch::Tensor norms;  // [local, global], float64 on the device
  // One table per bucket, shared by pack and unpack (the same gradients).
  std::map<size_t, Table<float>> tables_f;
  std::map<size_t, Table<double>> tables_d;

  template <typename T>
  std::map<size_t, Table<T>>& tables() {
    if constexpr (std::is_same_v<T, float>) {
      return tables_f;
    } else {
      return tables_d;
    }
  }

  template <typename T>
  const kernels::gpu::DeviceSegments<T>& table(size_t key, const std::vector<kernels::Segment<T>>& segs) {
    Table<T>& t = tables<T>()[key];
    if (!same_layout(t.uploaded, segs)) {
      DYNAMIX_CUDA_CHECK(t.device.upload(segs, kStream));
      t.uploaded = segs;
    }
    return t.device;
  }

  double* local() { return norms.data_ptr<double>(); }
  double* global() { return norms.data_ptr<double>() + 1; }
};

DevicePacker::DevicePacker(const torch::Device& device)
    : impl_(std::make_unique<Impl>(Impl{device, {}, {}, {}})) {
  DYNAMIX_CHECK(device.is_cuda(), "DevicePacker: not a CUDA device");
  impl_->norms = torch::zeros({2}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
}

DevicePacker::~DevicePacker() = default;

void DevicePacker::begin() {
  make_device_current(impl_->device);
  impl_->norms.zero_();
}

template <typename T>
void DevicePacker::pack(size_t key, const std::vector<kernels::Segment<T>>& segments, T scale, T* bucket) {
  make_device_current(impl_->device);
  const auto& table = impl_->table<T>(key, segments);
  DYNAMIX_CUDA_CHECK(kernels::gpu::pack_scale<T>(table, scale, bucket, impl_->local(), kStream));
}

template <typename T>
void DevicePacker::unpack(size_t key, const T* bucket, const std::vector<kernels::Segment<T>>& segments) {
  make_device_current(impl_->device);
  const auto& table = impl_->table<T>(key, segments);
  DYNAMIX_CUDA_CHECK(kernels::gpu::unpack<T>(bucket, table, impl_->global(), kStream));
}

void DevicePacker::pack_one(const torch::Tensor& grad, double scale, torch::Tensor slot) {
  make_device_current(impl_->device);
  const size_t n = static_cast<size_t>(grad.numel());
  if (grad.scalar_type() == torch::kFloat64) {
    DYNAMIX_CUDA_CHECK(
        kernels::gpu::squared_norm<double>(grad.data_ptr<double>(), n, impl_->local(), kStream));
  } else {
    DYNAMIX_CUDA_CHECK(kernels::gpu::squared_norm<float>(grad.data_ptr<float>(), n, impl_->local(), kStream));
  }
  torch::mul_out(slot, grad, scale);  // LibTorch's current stream: the default one
}

void DevicePacker::clear_layouts() {
  impl_->tables_f.clear();
  impl_->tables_d.clear();
}

std::pair<double, double> DevicePacker::norms() {
  const auto host = impl_->norms.to(torch::kCPU);  // waits for the kernels before it
  return {host[0].item<double>(), host[1].item<double>()};
}

#else  // no CUDA toolkit: buckets stay on the CPU

struct DevicePacker::Impl {};

DevicePacker::DevicePacker(const torch::Device& device) {
  throw Error(
      "gradient buckets on " + device.str() +
      " need the CUDA kernels, but this build has no CUDA toolkit (nvcc, NCCL); rebuild with it or train "
      "on the CPU");
}
DevicePacker::~DevicePacker() = default;
void DevicePacker::begin() {}
template <typename T>
void DevicePacker::pack(size_t, const std::vector<kernels::Segment<T>>&, T, T*) {}
template <typename T>
void DevicePacker::unpack(size_t, const T*, const std::vector<kernels::Segment<T>>&) {}
void DevicePacker::pack_one(const torch::Tensor&, double, torch::Tensor) {}
void DevicePacker::clear_layouts() {}
std::pair<double, double> DevicePacker::norms() { return {0, 0}; }

#endif

template void DevicePacker::pack<float>(size_t, const std::vector<kernels::Segment<float>>&, float, float*);
template void DevicePacker::pack<double>(size_t, const std::vector<kernels::Segment<double>>&, double,
                                         double*);
template void DevicePacker::unpack<float>(size_t, const float*, const std::vector<kernels::Segment<float>>&);
template void DevicePacker::unpack<double>(size_t, const double*,
                                           const std::vector<kernels::Segment<double>>&);

}  // namespace dynamix
