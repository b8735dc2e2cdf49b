// DYNAMIX — NCCL communicator (mpirun -np 1; meaningful at any NP with a GPU per local rank).
// Every test skips, with the reason, unless every rank has its own CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "framework/comm/cuda_check.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/comm/nccl_communicator.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

MpiRuntime& runtime() {
  static MpiRuntime rt(nullptr, nullptr);  // MPI is already up (test main): reads local rank/size
  return rt;
}

// Why the tests cannot run ("" when they can). Decided by all ranks together, so either every
// rank runs a test (and its collectives) or none does.
const std::string& skip_reason() {
  static const std::string reason = [] {
    std::string mine;
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      mine = "no usable CUDA device: cudaGetDeviceCount: " + cuda_error_string(e);
    } else if (count < runtime().local_size()) {
      mine = std::to_string(runtime().local_size()) + " ranks on this node but " + std::to_string(count) +
             " CUDA device(s)";
    }
    int bad = mine.empty() ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (bad != 0 && mine.empty()) mine = "another rank has no CUDA device of its own";
    return bad != 0 ? "NCCL tests need a GPU per rank: " + mine : std::string();
  }();
  return reason;
}

#define ASSERT_CUDA(call)                                                                          \
  do {                                                                                             \
    const cudaError_t assert_cuda_rc_ = (call);                                                    \
    ASSERT_EQ(assert_cuda_rc_, cudaSuccess) << #call << ": " << cudaGetErrorName(assert_cuda_rc_); \
  } while (0)

class NcclCommunicatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!skip_reason().empty()) GTEST_SKIP() << skip_reason();
    comm_ = std::make_unique<NcclCommunicator>(runtime());
    n_ = comm_->size();
    r_ = comm_->rank();
  }
  void TearDown() override {
    for (void* p : device_) cudaFree(p);
  }

  template <typename T>
  T* to_device(const std::vector<T>& host) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, host.size() * sizeof(T)), cudaSuccess);
    device_.push_back(p);
    EXPECT_EQ(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    return static_cast<T*>(p);
  }
  // Waits for the compute stream (collectives return before they finish), then copies back.
  template <typename T>
  std::vector<T> to_host(const T* device, size_t count) {
    std::vector<T> host(count);
    EXPECT_EQ(cudaStreamSynchronize(comm_->compute_stream()), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }

  std::unique_ptr<NcclCommunicator> comm_;
  std::vector<void*> device_;
  int n_ = 1;
  int r_ = 0;
};

TEST_F(NcclCommunicatorTest, DeviceAllreduceSumAndMax) {
  EXPECT_EQ(comm_->backend(), "nccl");
  EXPECT_EQ(comm_->device(), runtime().local_rank());
  std::vector<float> f(3 << 20, 0.5f * static_cast<float>(r_ + 1));  // several NCCL chunks
  float* df = to_device(f);
  comm_->allreduce_sum(df, f.size(), DType::kFloat32);
  const auto fr = to_host(df, f.size());
  EXPECT_FLOAT_EQ(fr.front(), 0.25f * n_ * (n_ + 1));
  EXPECT_FLOAT_EQ(fr.back(), 0.25f * n_ * (n_ + 1));

  std::vector<double> d = {1.0 * r_, 2.0, -1.0 * r_};
  double* dd = to_device(d);
  comm_->allreduce_sum(dd, d.size(), DType::kFloat64);
  EXPECT_EQ(to_host(dd, d.size()),
            (std::vector<double>{n_ * (n_ - 1) / 2.0, 2.0 * n_, -n_ * (n_ - 1) / 2.0}));

  std::vector<int64_t> m = {10 * r_, -r_};
  int64_t* dm = to_device(m);
  comm_->allreduce_max(dm, m.size(), DType::kInt64);
  EXPECT_EQ(to_host(dm, m.size()), (std::vector<int64_t>{10 * (n_ - 1), 0}));
  EXPECT_EQ(comm_->check_async_error(), "");
}

TEST_F(NcclCommunicatorTest, DeviceBroadcastAndAllgather) {
  std::vector<int32_t> plan(5, r_ + 100);
  int32_t* dp = to_device(plan);
  comm_->broadcast(dp, plan.size(), DType::kInt32, n_ - 1);
  EXPECT_EQ(to_host(dp, plan.size()), std::vector<int32_t>(5, n_ - 1 + 100));

  const size_t bytes = 1001;  // odd, not a multiple of any vector width
  std::vector<uint8_t> mine(bytes);
  for (size_t i = 0; i < bytes; ++i) mine[i] = static_cast<uint8_t>(r_ * 31 + i);
  uint8_t* send = to_device(mine);
  uint8_t* recv = to_device(std::vector<uint8_t>(bytes * n_, 0xEE));
  comm_->allgather(send, bytes, recv);
  const auto all = to_host(recv, bytes * n_);
  for (int q = 0; q < n_; ++q) {
    for (size_t i = 0; i < bytes; ++i) {
      ASSERT_EQ(all[q * bytes + i], static_cast<uint8_t>(q * 31 + i)) << "from rank " << q << " byte " << i;
    }
  }
}

// binary16 bits of a small positive integer (exact below 2048).
uint16_t half_bits(int n) {
  int e = 0;
  while ((n >> (e + 1)) > 0) ++e;
  return static_cast<uint16_t>(((15 + e) << 10) | (((n << 10) >> e) & 0x3FF));
}

TEST_F(NcclCommunicatorTest, HostBuffersGoThroughMpi) {
  std::vector<double> d = {1.0 * r_, 2.0};
  comm_->allreduce_sum(d.data(), d.size(), DType::kFloat64);
  EXPECT_EQ(d, (std::vector<double>{n_ * (n_ - 1) / 2.0, 2.0 * n_}));
  int32_t plan[2] = {r_, r_};
  comm_->broadcast(plan, 2, DType::kInt32, 0);
  EXPECT_EQ(plan[0], 0);
  std::vector<int> flags(n_);
  comm_->allgather(&r_, sizeof(int), flags.data());
  for (int q = 0; q < n_; ++q) EXPECT_EQ(flags[q], q);
  std::vector<int> gathered(n_);
  comm_->gather(&r_, sizeof(int), r_ == 0 ? gathered.data() : nullptr, 0);
  if (r_ == 0) {
    for (int q = 0; q < n_; ++q) EXPECT_EQ(gathered[q], q);
  }
  comm_->barrier();

  // float16 host buffers (pageable or pinned) go to MPI's 16-bit op (NCCL would refuse a host
  // pointer); the same on the device goes to NCCL.
  EXPECT_TRUE(comm_->reduces_device_buffers());
  std::vector<uint16_t> half(4, 0x3C00);  // 1.0 in binary16
  comm_->allreduce_sum(half.data(), half.size(), DType::kFloat16);
  EXPECT_EQ(half, std::vector<uint16_t>(4, half_bits(n_)));
  uint16_t* pinned = nullptr;
  ASSERT_CUDA(cudaMallocHost(reinterpret_cast<void**>(&pinned), 4 * sizeof(uint16_t)));
  std::fill(pinned, pinned + 4, uint16_t{0x3C00});
  comm_->allreduce_sum(pinned, 4, DType::kFloat16);
  EXPECT_EQ(std::vector<uint16_t>(pinned, pinned + 4), std::vector<uint16_t>(4, half_bits(n_)));
  cudaFreeHost(pinned);
  uint16_t* dh = to_device(std::vector<uint16_t>(4, 0x3C00));  // 1.0 in binary16
  comm_->allreduce_sum(dh, 4, DType::kFloat16);
  EXPECT_EQ(to_host(dh, 4), std::vector<uint16_t>(4, half_bits(n_)));

  // Mixed or device buffers where MPI is the only path are refused with a message.
  int* dint = to_device(std::vector<int>(n_, 0));
  EXPECT_THROW(comm_->allgather(&r_, sizeof(int), dint), Error);
  EXPECT_THROW(comm_->gather(dint, sizeof(int), nullptr, 0), Error);
}

void sleep_on_stream(void* ms) { usleep(static_cast<useconds_t>(*static_cast<int*>(ms)) * 1000); }

TEST_F(NcclCommunicatorTest, OrderedAfterAndBeforeTheComputeStream) {
  cudaStream_t s = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));  // no implicit ordering
  comm_->set_compute_stream(s);
  const size_t bytes = 1 << 20;
  uint8_t* send = to_device(std::vector<uint8_t>(bytes, 0));
  uint8_t* recv = to_device(std::vector<uint8_t>(bytes * n_, 0xEE));
  int32_t* sum = to_device(std::vector<int32_t>(1024, 0));
  uint8_t* out = nullptr;
  ASSERT_CUDA(cudaMallocHost(reinterpret_cast<void**>(&out), bytes * n_));
  std::vector<int32_t> sum_out(1024);

  // The compute stream is held up, then writes the inputs: a collective not ordered after it
  // would read the old zeros, and a copy not ordered after the collective would read 0xEE.
  static int delay_ms = 500;
  ASSERT_CUDA(cudaLaunchHostFunc(s, sleep_on_stream, &delay_ms));
  ASSERT_CUDA(cudaMemsetAsync(send, 0x11, bytes, s));
  // (Memsets, not copies from pageable memory: those would make the host wait for the stream.)
  ASSERT_CUDA(cudaMemsetAsync(sum, 0x01, 1024 * sizeof(int32_t), s));
  comm_->allgather(send, bytes, recv);
  comm_->allreduce_sum(sum, 1024, DType::kInt32);
  // The host did not wait for the collectives: the compute stream is still asleep.
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  ASSERT_CUDA(cudaMemcpyAsync(out, recv, bytes * n_, cudaMemcpyDeviceToHost, s));
  ASSERT_CUDA(cudaMemcpyAsync(sum_out.data(), sum, 1024 * sizeof(int32_t), cudaMemcpyDeviceToHost, s));
  ASSERT_CUDA(cudaStreamSynchronize(s));
  size_t wrong = 0;
  for (size_t i = 0; i < bytes * n_; ++i) wrong += out[i] != 0x11;
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(sum_out, std::vector<int32_t>(1024, 0x01010101 * n_));
  cudaFreeHost(out);
  comm_->set_compute_stream(nullptr);
  cudaStreamDestroy(s);
}

TEST_F(NcclCommunicatorTest, ErrorsNameTheCall) {
  int* d = to_device(std::vector<int>(4, 0));
  try {
    comm_->broadcast(d, 4, DType::kInt32, n_);  // no such root: NCCL rejects the arguments
    ADD_FAILURE() << "broadcast from a root that does not exist did not throw";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ncclBroadcast"), std::string::npos) << what;
    EXPECT_NE(what.find("rank " + std::to_string(r_)), std::string::npos) << what;
    EXPECT_NE(what.find("nccl_communicator.cc"), std::string::npos) << what;
  }
  int count = 0;
  ASSERT_CUDA(cudaGetDeviceCount(&count));
  try {
    DYNAMIX_CUDA_CHECK(cudaSetDevice(count + 3));
    ADD_FAILURE() << "cudaSetDevice on a missing device did not throw";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cudaSetDevice(count + 3)"), std::string::npos) << what;
    EXPECT_NE(what.find("cudaErrorInvalidDevice"), std::string::npos) << what;
  }
  // A local rank without a device: every rank throws, naming the fix.
  try {
    NcclCommunicator bad(MPI_COMM_WORLD, count + runtime().local_rank());
    ADD_FAILURE() << "a communicator on a missing device was created";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("one GPU per rank"), std::string::npos) << what;
    EXPECT_NE(what.find("backend: mpi"), std::string::npos) << what;
  }
}

TEST_F(NcclCommunicatorTest, AbortIsIdempotentAndThreadSafe) {
  EXPECT_EQ(comm_->check_async_error(), "");
  std::thread watchdog([this] { comm_->abort(); });
  watchdog.join();
  comm_->abort();
  comm_->abort();
  EXPECT_TRUE(comm_->aborted());
  EXPECT_NE(comm_->check_async_error(), "");
  float* d = to_device(std::vector<float>(8, 1.0f));
  EXPECT_THROW(comm_->allreduce_sum(d, 8, DType::kFloat32), Error);
  // Host collectives do not need NCCL and still work.
  int x = 1;
  comm_->allreduce_sum(&x, 1, DType::kInt32);
  EXPECT_EQ(x, n_);
  comm_.reset();  // no ncclCommDestroy after an abort
}

}  // namespace
}  // namespace dynamix
