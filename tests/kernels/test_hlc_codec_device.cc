// DYNAMIX — HlcCodec on device buckets against its host path: the same result bits and the same
// statistics (path, rounds, bytes, union, peeling, fallback, off grid) for the same gradients.
// Run under mpirun with 1 and 2 ranks. Backends: mpi (the device path's collectives go through
// pinned host copies; ranks may share a GPU) and nccl (device buffers; needs a GPU per rank).
// Every test skips, with the reason, unless every rank has a usable CUDA device; the decision is
// taken by all ranks together, so no rank waits in a collective its peers skipped.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "framework/comm/compression/codec.h"
#include "framework/comm/cuda_check.h"
#include "framework/comm/mpi_communicator.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/comm/nccl_communicator.h"

namespace dynamix {
namespace {

MpiRuntime& runtime() {
  static MpiRuntime rt(nullptr, nullptr);  // MPI is already up (test main): reads local rank/size
  return rt;
}

// "" when every rank can use a CUDA device, else why not (the same text on every rank).
const std::string& cuda_skip_reason() {
  static const std::string reason = [] {
    std::string mine;
    int devices = 0;
    cudaError_t e = cudaGetDeviceCount(&devices);
    if (e == cudaSuccess && devices == 0) mine = "no CUDA device";
    if (e == cudaSuccess && devices > 0) e = cudaSetDevice(runtime().local_rank() % devices);
    if (e == cudaSuccess && devices > 0) e = cudaFree(nullptr);  // creates the context
    if (e != cudaSuccess) mine = "no usable CUDA device: " + cuda_error_string(e);
    int bad = mine.empty() ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (bad != 0 && mine.empty()) mine = "another rank has none";
    return bad != 0 ? "hlc device tests need a CUDA device on every rank: " + mine : std::string();
  }();
  return reason;
}

// "" when NCCL can run here (one GPU per rank on this node), decided by all ranks.
const std::string& nccl_skip_reason() {
  static const std::string reason = [] {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
    int bad = devices >= runtime().local_size() ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return bad != 0 ? "the nccl variant needs a GPU per rank: " + std::to_string(runtime().local_size()) +
                          " ranks on this node, " + std::to_string(devices) + " CUDA device(s)"
                    : std::string();
  }();
  return reason;
}

void check(cudaError_t err, const char* call) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cuda_error_string(err));
}
#define CK(call) check((call), #call)

struct Outcome {
  std::vector<float> out;
  CodecStats stats;
};

Outcome on_host(GradientCodec& codec, std::vector<float> grad, Communicator& comm) {
  Outcome run;
  codec.allreduce_sum(grad.data(), grad.size(), comm, &run.stats);
  run.out = std::move(grad);
  return run;
}

Outcome on_device(GradientCodec& codec, const std::vector<float>& grad, Communicator& comm) {
  float* device = nullptr;
  CK(cudaMalloc(reinterpret_cast<void**>(&device), std::max<size_t>(grad.size(), 1) * sizeof(float)));
  std::unique_ptr<float, cudaError_t (*)(void*)> owner(device, cudaFree);
  CK(cudaMemcpy(device, grad.data(), grad.size() * sizeof(float), cudaMemcpyHostToDevice));
  Outcome run;
  codec.allreduce_sum(device, grad.size(), comm, &run.stats);
  // The result is ordered on the legacy default stream; cudaMemcpy runs there after it.
  run.out.resize(grad.size());
  CK(cudaMemcpy(run.out.data(), device, grad.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaDeviceSynchronize());
  return run;
}

// Bit equality of the buckets and equality of every statistic. `exact_nan`: NaN payloads too (the
// same MPI sums on both paths); NCCL's GPU arithmetic makes canonical NaNs where the CPU keeps the
// operand's payload, so there two NaNs are equal.
void expect_same(const Outcome& host, const Outcome& device, bool exact_nan) {
  ASSERT_EQ(host.out.size(), device.out.size());
  size_t differ = 0, first = 0;
  for (size_t i = host.out.size(); i-- > 0;) {
    const float a = host.out[i], b = device.out[i];
    if (!exact_nan && std::isnan(a) && std::isnan(b)) continue;
    if (std::memcmp(&a, &b, sizeof(float)) != 0) {
      ++differ;
      first = i;
    }
  }
  EXPECT_EQ(differ, 0u) << "elements differ, first at " << first << ": host " << host.out[first]
                        << ", device " << device.out[first];
  const CodecStats& h = host.stats;
  const CodecStats& d = device.stats;
  EXPECT_EQ(d.path, h.path);
  EXPECT_EQ(d.count, h.count);
  EXPECT_EQ(d.union_count, h.union_count);
  EXPECT_EQ(d.union_density, h.union_density);
  EXPECT_EQ(d.bytes_sent, h.bytes_sent);
  EXPECT_EQ(d.dense_bytes, h.dense_bytes);
  EXPECT_EQ(d.peeled_fraction, h.peeled_fraction);
  EXPECT_EQ(d.fallback_count, h.fallback_count);
  EXPECT_EQ(d.off_grid_count, h.off_grid_count);
  EXPECT_EQ(d.rounds, h.rounds);
}

// This rank's sparse gradient: ~density non-zeros of spread magnitudes. `specials`: some values the
// fixed-point grid cannot hold (~2^-100 below the largest, Inf, NaN) and negative zeros.
std::vector<float> sparse_grad(size_t n, double density, bool specials, unsigned seed) {
  std::mt19937_64 gen(seed * 7919u + static_cast<unsigned>(runtime().rank()));
  std::bernoulli_distribution keep(density);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-24, 4);
  std::uniform_int_distribution<int> special(0, 999);
  std::vector<float> data(n, 0.0f);
  for (size_t i = 0; i < n; ++i) {
    if (!keep(gen)) continue;
    float v = std::ldexp(mant(gen), exponent(gen));
    if (specials) {
      const int s = special(gen);
      if (s < 5) v = std::ldexp(mant(gen), -100);
      if (s == 5) v = -0.0f;
      if (s == 6) v = (gen() & 1) ? -INFINITY : INFINITY;
      if (s == 7) v = NAN;
    }
    data[i] = v == 0.0f && !std::signbit(v) ? 1.0f : v;
  }
  return data;
}

CodecOptions forced(double ratio = 1.5) {
  CodecOptions options;
  options.hlc_auto = false;
  options.hlc_ratio = ratio;
  return options;
}

class HlcDevicePath : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!cuda_skip_reason().empty()) GTEST_SKIP() << cuda_skip_reason();
    if (GetParam() == "nccl") {
      if (!nccl_skip_reason().empty()) GTEST_SKIP() << nccl_skip_reason();
      // Float sums (dense path, off-grid entries) equal MPI's bit for bit only up to 2 ranks: beyond,
      // NCCL and MPI may add in different orders.
      if (runtime().world() > 2) GTEST_SKIP() << "the nccl variant compares with MPI's sums at <= 2 ranks";
      comm_ = std::make_unique<NcclCommunicator>(runtime());
    } else {
      comm_ = std::make_unique<MpiCommunicator>();
    }
  }

  // One bucket through fresh codecs on both paths; returns the host path's statistics.
  CodecStats compare(const std::vector<float>& grad, const CodecOptions& options) {
    auto host_codec = make_codec(Compression::kHlc, options);
    auto device_codec = make_codec(Compression::kHlc, options);
    return compare(*host_codec, *device_codec, grad);
  }
  CodecStats compare(GradientCodec& host_codec, GradientCodec& device_codec, const std::vector<float>& grad) {
    const Outcome host = on_host(host_codec, grad, *comm_);
    const Outcome device = on_device(device_codec, grad, *comm_);
    expect_same(host, device, GetParam() != "nccl");
    return host.stats;
  }

  std::unique_ptr<Communicator> comm_;
};

TEST_P(HlcDevicePath, MatchesHostPathAtEveryDensity) {
  const size_t n = 200003;  // not a multiple of the 1024-element block nor of a word's fields
  for (double density : {0.001, 0.01, 0.1, 0.5}) {
    SCOPED_TRACE("density " + std::to_string(density));
    const CodecStats s = compare(sparse_grad(n, density, false, 1), forced());
    EXPECT_EQ(s.path, "hlc");
    EXPECT_GT(s.peeled_fraction, 0.9);
  }
}

// Sketches too small to peel: the integer fallback (round 5) carries most entries.
TEST_P(HlcDevicePath, StalledPeelingFallsBackLikeHostPath) {
  for (double ratio : {0.3, 0.6}) {
    for (double density : {0.02, 0.1}) {
      SCOPED_TRACE("ratio " + std::to_string(ratio) + ", density " + std::to_string(density));
      EXPECT_GT(compare(sparse_grad(100000, density, false, 2), forced(ratio)).fallback_count, 0u);
    }
  }
}

// Off-grid values (rounds 4 and 6), alone and together with a stalled peel.
TEST_P(HlcDevicePath, OffGridValuesLikeHostPath) {
  for (double ratio : {1.5, 0.5}) {
    for (double density : {0.01, 0.2}) {
      SCOPED_TRACE("ratio " + std::to_string(ratio) + ", density " + std::to_string(density));
      const CodecStats s = compare(sparse_grad(60000, density, true, 3), forced(ratio));
      EXPECT_GT(s.off_grid_count, 0u);
    }
  }
  // Off the grid on rank 0 only, and a NaN on the last rank only.
  std::vector<float> grad = sparse_grad(6000, 0.05, false, 4);
  grad[10] = 1.0f;
  grad[20] = comm_->rank() == 0 ? 1e-30f : 0.0f;
  grad[30] = 1e-25f * static_cast<float>(comm_->rank() + 1);
  if (comm_->rank() == comm_->size() - 1) grad[40] = NAN;
  EXPECT_EQ(compare(grad, forced()).off_grid_count, 3u);
}

// The byte model: dense after the head round, hlc, and (2 ranks, disjoint supports) dense after
// the union round.
TEST_P(HlcDevicePath, AutomaticChoiceLikeHostPath) {
  const size_t n = 40000;
  const CodecStats dense = compare(sparse_grad(n, 1.0, false, 5), CodecOptions{});
  EXPECT_EQ(dense.path, "dense");
  EXPECT_EQ(dense.rounds, 2);
  const CodecStats sparse = compare(sparse_grad(n, 0.001, false, 6), CodecOptions{});
  EXPECT_EQ(sparse.path, "hlc");
  std::vector<float> disjoint(n, 0.0f);
  const int ranks = comm_->size();
  for (size_t i = static_cast<size_t>(comm_->rank()); i < n; i += 5 * static_cast<size_t>(ranks)) {
    disjoint[i] = 0.25f + static_cast<float>(i % 7);
  }
  const CodecStats late = compare(disjoint, CodecOptions{});
  if (ranks == 2) {
    EXPECT_EQ(late.path, "dense");
    EXPECT_EQ(late.rounds, 3);  // head, union, dense
  }
}

TEST_P(HlcDevicePath, SmallAndEmptyBuckets) {
  for (size_t n : {size_t{1}, size_t{63}, size_t{1023}, size_t{1025}}) {
    SCOPED_TRACE("n " + std::to_string(n));
    compare(sparse_grad(n, 0.3, false, 7), forced());
    compare(sparse_grad(n, 0.3, true, 8), forced());
  }
  const CodecStats zeros = compare(std::vector<float>(5000, 0.0f), forced());
  EXPECT_EQ(zeros.union_count, 0u);
  std::vector<float> one_rank(5000, 0.0f);
  if (comm_->rank() == 0) one_rank[4999] = -3.5f;
  EXPECT_EQ(compare(one_rank, forced()).union_count, 1u);
  const CodecStats empty = compare({}, forced());
  EXPECT_EQ(empty.rounds, 0);
}

// One codec per path for many buckets: the device buffers grow, shrink in use and are reused.
TEST_P(HlcDevicePath, OneCodecAcrossBucketSizes) {
  auto host_codec = make_codec(Compression::kHlc);
  auto device_codec = make_codec(Compression::kHlc);
  auto host_forced = make_codec(Compression::kHlc, forced());
  auto device_forced = make_codec(Compression::kHlc, forced());
  unsigned seed = 100;
  for (size_t n : {size_t{3000}, size_t{250000}, size_t{700}, size_t{90000}, size_t{400000}, size_t{5}}) {
    for (double density : {0.002, 0.05, 0.4}) {
      SCOPED_TRACE("n " + std::to_string(n) + ", density " + std::to_string(density));
      const std::vector<float> grad = sparse_grad(n, density, density > 0.01, ++seed);
      compare(*host_codec, *device_codec, grad);
      compare(*host_forced, *device_forced, grad);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, HlcDevicePath, ::testing::Values("mpi", "nccl"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// Even ranks pass device buckets, odd ranks host buckets, over MPI: both paths must issue the same
// collectives with the same counts and types (a mismatch fails or hangs MPI), and every rank must
// end with the bits an all-host run gives.
TEST(HlcDeviceAndHostRanks, IssueTheSameCollectives) {
  if (!cuda_skip_reason().empty()) GTEST_SKIP() << cuda_skip_reason();
  MpiCommunicator comm;
  const bool device = comm.rank() % 2 == 0;
  unsigned seed = 200;
  for (const CodecOptions& options : {CodecOptions{}, forced(), forced(0.4)}) {
    for (double density : {0.001, 0.05, 0.3, 1.0}) {
      for (bool specials : {false, true}) {
        SCOPED_TRACE("density " + std::to_string(density) + ", auto " + std::to_string(options.hlc_auto) +
                     ", ratio " + std::to_string(options.hlc_ratio));
        const std::vector<float> grad = sparse_grad(30011, density, specials, ++seed);
        auto reference = make_codec(Compression::kHlc, options);
        auto mixed = make_codec(Compression::kHlc, options);
        const Outcome host = on_host(*reference, grad, comm);
        const Outcome run = device ? on_device(*mixed, grad, comm) : on_host(*mixed, grad, comm);
        expect_same(host, run, true);
      }
    }
  }
}

}  // namespace
}  // namespace dynamix
