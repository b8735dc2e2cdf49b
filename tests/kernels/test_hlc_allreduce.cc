// DYNAMIX — multi-rank tests of the allreduce codecs (run under mpirun with 2, 3 and 4 ranks).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>

#include "framework/comm/compression/codec.h"
#include "framework/comm/mpi_communicator.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/core/error.h"
#include "tests/mpi_leak_check.h"

namespace dynamix {
namespace {

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return f == 0.0f ? 0u : b;  // +0 and -0 are the same gradient
}

// This rank's weighted sparse gradient: w_r * g with |g| in [2^-20, 1], so the exact sum over
// <= 4 ranks fits a double and (float)(double sum) is the correctly rounded float of it.
std::vector<float> sparse_grad(size_t n, double density, int rank, int ranks, unsigned seed) {
  std::mt19937 gen(seed * 1000 + rank);
  std::bernoulli_distribution keep(density);
  std::uniform_real_distribution<float> g(-1.0f, 1.0f);
  const float weight = static_cast<float>(rank + 1) / static_cast<float>(ranks * (ranks + 1) / 2);
  std::vector<float> out(n, 0.0f);
  for (size_t i = 0; i < n; ++i) {
    if (!keep(gen)) continue;
    float v = g(gen);
    if (std::fabs(v) < std::ldexp(1.0f, -20)) v = 0.5f;
    out[i] = weight * v;
  }
  return out;
}

std::vector<float> gather_all(const std::vector<float>& mine, MpiCommunicator& comm) {
  std::vector<float> all(mine.size() * comm.size());
  comm.allgather(mine.data(), mine.size() * sizeof(float), all.data());
  return all;
}

// Correctly rounded float of the exact sum over ranks (exact in double for sparse_grad values).
std::vector<float> exact_sum(const std::vector<float>& all, size_t n, int ranks) {
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    double s = 0.0;
    for (int r = 0; r < ranks; ++r) s += all[r * n + i];
    out[i] = static_cast<float>(s);
  }
  return out;
}

// Every rank must hold the same result, bit for bit.
void expect_ranks_agree(const std::vector<float>& result, MpiCommunicator& comm) {
  const std::vector<float> all = gather_all(result, comm);
  size_t differ = 0;
  for (int r = 1; r < comm.size(); ++r) {
    for (size_t i = 0; i < result.size(); ++i) differ += bits(all[r * result.size() + i]) != bits(all[i]);
  }
  EXPECT_EQ(differ, 0u) << "ranks disagree";
}

size_t count_mismatch(const std::vector<float>& a, const std::vector<float>& b) {
  size_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) bad += bits(a[i]) != bits(b[i]);
  return bad;
}

class HlcAllreduce : public ::testing::Test {
 protected:
  MpiCommunicator comm_;
};

// The rule: every on-grid entry is the correctly rounded exact sum; with 2 ranks that is exactly
// what a dense float32 allreduce returns.
TEST_F(HlcAllreduce, MatchesExactSumAtEveryDensity) {
  const size_t n = 50000;  // not a multiple of the 1024-element block
  for (double density : {0.001, 0.01, 0.1, 0.5}) {
    for (double ratio : {1.5, 0.3}) {  // 0.3: peeling stalls, the fallback must stay exact
      const std::vector<float> grad = sparse_grad(n, density, comm_.rank(), comm_.size(), 11);
      const std::vector<float> expect = exact_sum(gather_all(grad, comm_), n, comm_.size());
      CodecOptions options;
      options.hlc_auto = false;
      options.hlc_ratio = ratio;
      auto codec = make_codec(Compression::kHlc, options);
      std::vector<float> result = grad;
      CodecStats stats;
      codec->allreduce_sum(result.data(), n, comm_, &stats);
      SCOPED_TRACE("density " + std::to_string(density) + " ratio " + std::to_string(ratio));
      EXPECT_EQ(stats.path, "hlc");
      EXPECT_EQ(count_mismatch(result, expect), 0u);
      expect_ranks_agree(result, comm_);
      EXPECT_EQ(stats.off_grid_count, 0u);
      EXPECT_GT(stats.union_count, 0u);
      EXPECT_NEAR(stats.union_density, 1.0 - std::pow(1.0 - density, comm_.size()), 0.02);
      if (ratio < 1.0) {
        EXPECT_GT(stats.fallback_count, 0u);
        EXPECT_LT(stats.peeled_fraction, 0.9);
      } else {
        EXPECT_GT(stats.peeled_fraction, 0.9);
        EXPECT_EQ(stats.fallback_count,
                  static_cast<size_t>(std::llround((1.0 - stats.peeled_fraction) * stats.union_count)));
      }
      if (comm_.size() == 2) {
        std::vector<float> dense = grad;
        comm_.allreduce_sum(dense.data(), n, DType::kFloat32);
        EXPECT_EQ(count_mismatch(result, dense), 0u) << "2 ranks: hlc must equal dense float32 bit for bit";
      }
    }
  }
}

TEST_F(HlcAllreduce, AutomaticChoice) {
  const size_t n = 40000;
  auto codec = make_codec(Compression::kHlc);
  CodecStats stats;
  std::vector<float> dense_grad = sparse_grad(n, 1.0, comm_.rank(), comm_.size(), 5);
  std::vector<float> expect = dense_grad;
  comm_.allreduce_sum(expect.data(), n, DType::kFloat32);
  codec->allreduce_sum(dense_grad.data(), n, comm_, &stats);
  EXPECT_EQ(stats.path, "dense");
  EXPECT_EQ(stats.rounds, 2);  // the small head round, then the dense allreduce
  EXPECT_EQ(count_mismatch(dense_grad, expect), 0u);

  std::vector<float> sparse = sparse_grad(n, 0.001, comm_.rank(), comm_.size(), 6);
  const std::vector<float> exact = exact_sum(gather_all(sparse, comm_), n, comm_.size());
  codec->allreduce_sum(sparse.data(), n, comm_, &stats);
  EXPECT_EQ(stats.path, "hlc");
  EXPECT_LT(stats.bytes_sent, stats.dense_bytes / 4);
  EXPECT_EQ(count_mismatch(sparse, exact), 0u);
}

// Values far below the bucket's largest, and non-finite values, leave the fixed-point grid and
// are summed by a dense float allreduce of those positions.
TEST_F(HlcAllreduce, OffGridValuesUseDenseFloat) {
  const size_t n = 6000;
  std::vector<float> grad = sparse_grad(n, 0.05, comm_.rank(), comm_.size(), 8);
  grad[10] = 1.0f;
  grad[20] = comm_.rank() == 0 ? 1e-30f : 0.0f;              // off the grid on rank 0 only
  grad[30] = 1e-25f * static_cast<float>(comm_.rank() + 1);  // off the grid everywhere
  if (comm_.rank() == comm_.size() - 1) grad[40] = NAN;
  CodecOptions options;
  options.hlc_auto = false;
  auto codec = make_codec(Compression::kHlc, options);
  std::vector<float> result = grad;
  CodecStats stats;
  codec->allreduce_sum(result.data(), n, comm_, &stats);
  EXPECT_EQ(stats.off_grid_count, 3u);
  EXPECT_TRUE(std::isnan(result[40]));
  std::vector<float> dense = grad;
  comm_.allreduce_sum(dense.data(), n, DType::kFloat32);
  const float tiny = 1e-25f * comm_.size() * (comm_.size() + 1) / 2;
  EXPECT_NEAR(result[30], tiny, tiny * 1e-6);
  EXPECT_EQ(result[20], dense[20]);
  if (comm_.size() == 2) {
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) bad += i != 40 && bits(result[i]) != bits(dense[i]);
    EXPECT_EQ(bad, 0u);
  }
  result[40] = 0.0f;
  expect_ranks_agree(result, comm_);
}

// fp16 / bf16: weights survive; error within the 16-bit format's rounding of every combine.
TEST_F(HlcAllreduce, HalfCodecsKeepWeighting) {
  const size_t n = 20000;
  std::mt19937 gen(comm_.rank() + 40);
  std::uniform_real_distribution<float> g(0.05f, 1.0f);  // positive, far from fp16 subnormals
  const int ranks = comm_.size();
  const float weight = static_cast<float>(comm_.rank() + 1) / static_cast<float>(ranks * (ranks + 1) / 2);
  std::vector<float> grad(n);
  for (float& v : grad) v = weight * g(gen);
  const std::vector<float> all = gather_all(grad, comm_);
  for (const char* name : {"fp16", "bf16"}) {
    // Unit roundoff of the 16-bit format (10 / 7 stored mantissa bits).
    const double unit = std::string(name) == "fp16" ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    auto codec = make_codec(parse_choice<Compression>(name, "comm.compression"));
    std::vector<float> result = grad;
    CodecStats stats;
    codec->allreduce_sum(result.data(), n, comm_, &stats);
    EXPECT_EQ(stats.path, name);
    EXPECT_EQ(stats.bytes_sent, 2 * n);
    size_t bad = 0, inexact = 0;
    for (size_t i = 0; i < n; ++i) {
      double exact = 0.0;
      for (int r = 0; r < ranks; ++r) exact += all[r * n + i];
      // `ranks` input casts + (ranks - 1) combines, each off by at most unit * (partial sum <= exact).
      bad += std::fabs(result[i] - exact) > (2 * ranks - 1) * unit * exact;
      inexact += result[i] != static_cast<float>(exact);
    }
    EXPECT_EQ(bad, 0u) << name;
    EXPECT_GT(inexact, 0u) << name << ": result carries no 16-bit rounding at all";
    expect_ranks_agree(result, comm_);
  }
}

TEST(CodecFactory, BadHlcOptionsThrow) {
  CodecOptions bad;
  bad.hlc_ratio = 0.0;
  EXPECT_THROW(make_codec(Compression::kHlc, bad), Error);
}

}  // namespace
}  // namespace dynamix

int main(int argc, char** argv) {
  std::optional<dynamix::MpiRuntime> mpi;
  {
    dynamix::test::IgnoreLeaksOfMpiInit ignore;
    mpi.emplace(&argc, &argv);
  }
  ::testing::InitGoogleTest(&argc, argv);
  if (mpi->rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS();
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  dynamix::test::check_leaks_before_mpi_finalize();
  return failed;
}
