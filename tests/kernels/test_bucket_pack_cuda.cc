// DYNAMIX — CUDA bucket pack/unpack and squared norms against the CPU reference (kernels/cpu).
// Buckets and unpacked tensors must match bit for bit; norms to 1e-12 relative (both sides sum
// in double, only the order differs). Skips, naming the CUDA error, where no device is usable.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/bucket_pack.h"
#include "kernels/cuda/bucket_pack_cuda.h"

namespace dynamix::kernels {
namespace {

#define ASSERT_CUDA(call)                                                                          \
  do {                                                                                             \
    const cudaError_t assert_cuda_rc_ = (call);                                                    \
    ASSERT_EQ(assert_cuda_rc_, cudaSuccess) << #call << ": " << cudaGetErrorName(assert_cuda_rc_); \
  } while (0)

// Why no CUDA device can be used here ("" when one can).
const std::string& no_device_reason() {
  static const std::string reason = [] {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      return "no usable CUDA device: cudaGetDeviceCount: " + std::string(cudaGetErrorName(e)) + ": " +
             cudaGetErrorString(e);
    }
    if (count == 0) return std::string("no usable CUDA device: cudaGetDeviceCount returned 0");
    return std::string();
  }();
  return reason;
}

template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) {
    if (n > 0 && cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T)) != cudaSuccess) p_ = nullptr;
  }
  ~DeviceArray() { cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return p_; }
  bool ok() const { return n_ == 0 || p_ != nullptr; }

 private:
  T* p_ = nullptr;
  size_t n_;
};

// One layout: per segment its element count, its bucket offset, and whether it has data.
struct Layout {
  std::string name;
  std::vector<size_t> counts;
  std::vector<size_t> offsets;  // empty: packed back to back
  std::vector<bool> null;       // empty: none null
  size_t bucket = 0;            // elements (0: end of the last segment)
};

std::vector<Layout> layouts() {
  std::vector<Layout> out;
  out.push_back({"one_element", {1}, {}, {}, 0});
  out.push_back({"odd_sizes_with_null",
                 {1, 3, 7, 1000, 33, 5, 2, 4097},
                 {},
                 {false, false, true, false, false, true, false, false},
                 0});
  out.push_back({"all_null", {17, 5}, {}, {true, true}, 0});
  // Over 2^20 elements, a first segment at an odd offset and a null one in between.
  out.push_back({"large", {(1u << 20) + 3, 12345, 777, 1}, {}, {false, false, true, false}, 0});
  // Unsorted offsets with gaps: positions outside every segment must be left alone.
  out.push_back({"unsorted_gaps", {100, 10, 1, 513}, {700, 3, 50, 120}, {}, 1000});
  // More segments than a shared-memory tile (256), mostly tiny.
  Layout many{"many_small", {}, {}, {}, 0};
  for (size_t i = 0; i < 700; ++i) {
    many.counts.push_back(1 + (i * 7) % 13);
    many.null.push_back(i % 11 == 5);
  }
  out.push_back(many);
  return out;
}

template <typename T>
struct Case {
  std::vector<std::vector<T>> host;  // per segment (empty for null)
  std::vector<Segment<T>> cpu;       // pointing into host
  std::vector<Segment<T>> gpu;       // pointing into device copies
  std::vector<std::unique_ptr<DeviceArray<T>>> device;
  size_t bucket = 0;
};

template <typename T>
void make_case(const Layout& layout, uint32_t seed, Case<T>* c) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  size_t next = 0;
  for (size_t k = 0; k < layout.counts.size(); ++k) {
    const size_t count = layout.counts[k];
    const size_t offset = layout.offsets.empty() ? next : layout.offsets[k];
    next = offset + count;
    c->bucket = std::max(c->bucket, next);
    const bool null = !layout.null.empty() && layout.null[k];
    c->host.emplace_back(null ? 0 : count);
    for (auto& x : c->host.back()) x = static_cast<T>(normal(rng) * 3.0);
    c->device.push_back(std::make_unique<DeviceArray<T>>(null ? 0 : count));
    c->cpu.push_back({null ? nullptr : c->host.back().data(), count, offset});
    c->gpu.push_back({null ? nullptr : c->device.back()->get(), count, offset});
  }
  c->bucket = std::max(c->bucket, layout.bucket);
}

template <typename T>
class BucketPackCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!no_device_reason().empty()) GTEST_SKIP() << no_device_reason();
    ASSERT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ASSERT_CUDA(cudaMalloc(reinterpret_cast<void**>(&norm_), sizeof(double)));
  }
  void TearDown() override {
    if (norm_ != nullptr) cudaFree(norm_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  double read_norm() {
    double v = 0;
    EXPECT_EQ(cudaMemcpyAsync(&v, norm_, sizeof(double), cudaMemcpyDeviceToHost, stream_), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    return v;
  }
  void set_norm(double v) {
    ASSERT_CUDA(cudaMemcpyAsync(norm_, &v, sizeof(double), cudaMemcpyHostToDevice, stream_));
    ASSERT_CUDA(cudaStreamSynchronize(stream_));
  }

  cudaStream_t stream_ = nullptr;
  double* norm_ = nullptr;
};

using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(BucketPackCuda, Types);

constexpr double kNormTolerance = 1e-12;

void expect_norm(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, kNormTolerance * std::max(std::abs(want), 1e-300)) << what;
}

TYPED_TEST(BucketPackCuda, PackScaleMatchesCpuBitForBit) {
  using T = TypeParam;
  const T scale = static_cast<T>(1.0 / 3.0);  // not a power of two: rounding is exercised
  const T sentinel = static_cast<T>(-42.5);
  for (const Layout& layout : layouts()) {
    SCOPED_TRACE(layout.name);
    Case<T> c;
    make_case(layout, 7, &c);
    for (size_t k = 0; k < c.host.size(); ++k) {
      if (c.gpu[k].data == nullptr) continue;
      ASSERT_TRUE(c.device[k]->ok());
      ASSERT_CUDA(
          cudaMemcpy(c.gpu[k].data, c.host[k].data(), c.host[k].size() * sizeof(T), cudaMemcpyHostToDevice));
    }
    std::vector<T> want(c.bucket, sentinel);
    const double want_norm = pack_scale(c.cpu, scale, want.data());

    DeviceArray<T> bucket(c.bucket);
    ASSERT_TRUE(bucket.ok());
    std::vector<T> got(c.bucket, sentinel);
    ASSERT_CUDA(cudaMemcpy(bucket.get(), got.data(), c.bucket * sizeof(T), cudaMemcpyHostToDevice));
    gpu::DeviceSegments<T> segments;
    ASSERT_CUDA(segments.upload(c.gpu, this->stream_));
    EXPECT_EQ(segments.size(), c.gpu.size());
    this->set_norm(0.5);  // accumulates into what is there
    ASSERT_CUDA(gpu::pack_scale(segments, scale, bucket.get(), this->norm_, this->stream_));
    ASSERT_CUDA(cudaStreamSynchronize(this->stream_));
    ASSERT_CUDA(cudaMemcpy(got.data(), bucket.get(), c.bucket * sizeof(T), cudaMemcpyDeviceToHost));
    EXPECT_EQ(std::memcmp(got.data(), want.data(), c.bucket * sizeof(T)), 0);
    for (size_t i = 0; i < c.bucket; ++i) {
      if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
        ADD_FAILURE() << "first difference at bucket element " << i << ": " << got[i] << " vs " << want[i];
        break;
      }
    }
    expect_norm(this->read_norm(), 0.5 + want_norm, "pack norm");

    // Without a norm output: same bucket, nothing written to the norm.
    this->set_norm(0.0);
    ASSERT_CUDA(cudaMemsetAsync(bucket.get(), 0, c.bucket * sizeof(T), this->stream_));
    ASSERT_CUDA(gpu::pack_scale(segments, scale, bucket.get(), nullptr, this->stream_));
    ASSERT_CUDA(cudaStreamSynchronize(this->stream_));
    ASSERT_CUDA(cudaMemcpy(got.data(), bucket.get(), c.bucket * sizeof(T), cudaMemcpyDeviceToHost));
    for (const auto& s : c.cpu) {
      EXPECT_EQ(std::memcmp(got.data() + s.offset, want.data() + s.offset, s.count * sizeof(T)), 0);
    }
    EXPECT_EQ(this->read_norm(), 0.0);
  }
}

TYPED_TEST(BucketPackCuda, UnpackMatchesCpuBitForBit) {
  using T = TypeParam;
  for (const Layout& layout : layouts()) {
    SCOPED_TRACE(layout.name);
    Case<T> c;
    make_case(layout, 11, &c);
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> uniform(-2.0, 2.0);
    std::vector<T> bucket_host(c.bucket);
    for (auto& x : bucket_host) x = static_cast<T>(uniform(rng));
    const T sentinel = static_cast<T>(9.25);
    for (size_t k = 0; k < c.host.size(); ++k) {
      std::fill(c.host[k].begin(), c.host[k].end(), sentinel);
      if (c.gpu[k].data != nullptr) {
        ASSERT_CUDA(cudaMemcpy(c.gpu[k].data, c.host[k].data(), c.host[k].size() * sizeof(T),
                               cudaMemcpyHostToDevice));
      }
    }
    const double want_norm = unpack(bucket_host.data(), c.cpu);

    DeviceArray<T> bucket(c.bucket);
    ASSERT_TRUE(bucket.ok());
    ASSERT_CUDA(cudaMemcpy(bucket.get(), bucket_host.data(), c.bucket * sizeof(T), cudaMemcpyHostToDevice));
    gpu::DeviceSegments<T> segments;
    ASSERT_CUDA(segments.upload(c.gpu, this->stream_));
    this->set_norm(0.0);
    ASSERT_CUDA(gpu::unpack(bucket.get(), segments, this->norm_, this->stream_));
    ASSERT_CUDA(cudaStreamSynchronize(this->stream_));
    for (size_t k = 0; k < c.host.size(); ++k) {
      if (c.gpu[k].data == nullptr) continue;
      std::vector<T> got(c.host[k].size());
      ASSERT_CUDA(cudaMemcpy(got.data(), c.gpu[k].data, got.size() * sizeof(T), cudaMemcpyDeviceToHost));
      EXPECT_EQ(std::memcmp(got.data(), c.host[k].data(), got.size() * sizeof(T)), 0) << "segment " << k;
    }
    expect_norm(this->read_norm(), want_norm, "unpack norm");
  }
}

TYPED_TEST(BucketPackCuda, LayoutReuploadAndEmptyLayout) {
  using T = TypeParam;
  gpu::DeviceSegments<T> segments;
  ASSERT_CUDA(segments.upload({}, this->stream_));
  EXPECT_EQ(segments.size(), 0u);
  this->set_norm(1.25);
  ASSERT_CUDA(gpu::pack_scale(segments, T(2), static_cast<T*>(nullptr), this->norm_, this->stream_));
  ASSERT_CUDA(gpu::unpack(static_cast<const T*>(nullptr), segments, this->norm_, this->stream_));
  EXPECT_EQ(this->read_norm(), 1.25);

  // Growing reallocates the device table; shrinking reuses it.
  for (const char* name : {"one_element", "many_small", "one_element"}) {
    SCOPED_TRACE(name);
    Layout layout;
    for (const auto& l : layouts()) {
      if (l.name == name) layout = l;
    }
    Case<T> c;
    make_case(layout, 5, &c);
    for (size_t k = 0; k < c.host.size(); ++k) {
      if (c.gpu[k].data == nullptr) continue;
      ASSERT_CUDA(
          cudaMemcpy(c.gpu[k].data, c.host[k].data(), c.host[k].size() * sizeof(T), cudaMemcpyHostToDevice));
    }
    std::vector<T> want(c.bucket, T(0));
    const double want_norm = pack_scale(c.cpu, T(1), want.data());
    DeviceArray<T> bucket(c.bucket);
    ASSERT_CUDA(segments.upload(c.gpu, this->stream_));
    EXPECT_EQ(segments.size(), c.gpu.size());
    this->set_norm(0.0);
    ASSERT_CUDA(gpu::pack_scale(segments, T(1), bucket.get(), this->norm_, this->stream_));
    std::vector<T> got(c.bucket);
    ASSERT_CUDA(cudaMemcpyAsync(got.data(), bucket.get(), c.bucket * sizeof(T), cudaMemcpyDeviceToHost,
                                this->stream_));
    expect_norm(this->read_norm(), want_norm, "norm");
    EXPECT_EQ(std::memcmp(got.data(), want.data(), c.bucket * sizeof(T)), 0);
  }
}

TYPED_TEST(BucketPackCuda, SquaredNorm) {
  using T = TypeParam;
  for (size_t n : {size_t{0}, size_t{1}, size_t{1023}, (size_t{1} << 20) + 17}) {
    SCOPED_TRACE(n);
    std::mt19937_64 rng(n);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<T> x(n);
    long double want = 0;
    for (auto& v : x) {
      v = static_cast<T>(normal(rng));
      want += static_cast<long double>(v) * v;
    }
    DeviceArray<T> d(n);
    ASSERT_TRUE(d.ok());
    if (n > 0) ASSERT_CUDA(cudaMemcpy(d.get(), x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    this->set_norm(0.0);
    ASSERT_CUDA(gpu::squared_norm(static_cast<const T*>(d.get()), n, this->norm_, this->stream_));
    expect_norm(this->read_norm(), static_cast<double>(want), "squared_norm");
  }
}

}  // namespace
}  // namespace dynamix::kernels
