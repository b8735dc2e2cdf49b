// DYNAMIX — the hlc CUDA kernels against the CPU reference, bit for bit, stage by stage. Ranks are
// simulated in one process: their words and cells are summed on the host, as the allreduce would.
// Every test skips, with the CUDA error text, where no device is usable.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/hlc/cuda/hlc_cuda.h"
#include "kernels/hlc/fixed_point.h"
#include "kernels/hlc/sketch.h"

namespace dynamix {
namespace {

std::string cuda_unusable() {
  int devices = 0;
  cudaError_t err = cudaGetDeviceCount(&devices);
  if (err == cudaSuccess && devices == 0) return "no CUDA device";
  if (err == cudaSuccess) err = cudaFree(nullptr);  // creates the context
  if (err != cudaSuccess) {
    return std::string("no usable CUDA device: ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
  }
  return "";
}

#define SKIP_WITHOUT_CUDA()                  \
  do {                                       \
    const std::string why = cuda_unusable(); \
    if (!why.empty()) GTEST_SKIP() << why;   \
  } while (0)

// Throws, so a failing call fails the test with its text wherever it happens.
void check(cudaError_t err, const char* call) {
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string(call) + ": " + cudaGetErrorName(err) + ": " +
                             cudaGetErrorString(err));
  }
}
#define CK(call) check((call), #call)

template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) { CK(cudaMalloc(&ptr_, std::max<size_t>(n, 1) * sizeof(T))); }
  explicit DeviceArray(const std::vector<T>& v) : DeviceArray(v.size()) { upload(v); }
  ~DeviceArray() { cudaFree(ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return ptr_; }
  void upload(const std::vector<T>& v) {
    if (!v.empty()) CK(cudaMemcpy(ptr_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  void zero() { CK(cudaMemset(ptr_, 0, n_ * sizeof(T))); }
  std::vector<T> download(size_t n) const {
    std::vector<T> v(n);
    CK(cudaDeviceSynchronize());
    if (n) CK(cudaMemcpy(v.data(), ptr_, n * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }
  std::vector<T> download() const { return download(n_); }

 private:
  T* ptr_ = nullptr;
  size_t n_;
};

class Stream {
 public:
  Stream() { CK(cudaStreamCreate(&stream_)); }
  ~Stream() { cudaStreamDestroy(stream_); }
  operator cudaStream_t() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

uint32_t device_count(const DeviceArray<uint32_t>& num) { return num.download(1)[0]; }

// Element-wise bit equality, reporting the first difference and how many differ.
template <typename T>
::testing::AssertionResult same_bits(const char* a_expr, const char* b_expr, const std::vector<T>& a,
                                     const std::vector<T>& b) {
  if (a.size() != b.size()) {
    return ::testing::AssertionFailure()
           << a_expr << " has " << a.size() << " elements, " << b_expr << " has " << b.size();
  }
  size_t differ = 0, first = 0;
  for (size_t i = a.size(); i-- > 0;) {
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) {
      ++differ;
      first = i;
    }
  }
  if (differ == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << a_expr << " and " << b_expr << " differ at " << differ << " of " << a.size()
         << " elements, first at " << first << ": " << +a[first] << " vs " << +b[first];
}
#define EXPECT_SAME_BITS(a, b) EXPECT_PRED_FORMAT2(same_bits, a, b)

int64_t float_slot(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return static_cast<int64_t>(bits);
}

// A sparse gradient: ~density non-zeros of spread magnitudes; `specials` adds what the grid cannot
// hold (values ~2^-100 below the bucket's largest, Inf, NaN) and negative zeros (which count as zero).
std::vector<float> sparse_bucket(size_t count, double density, bool specials, std::mt19937_64* gen) {
  std::bernoulli_distribution keep(density);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-24, 4);
  std::uniform_int_distribution<int> special(0, 999);
  std::vector<float> data(count, 0.0f);
  for (size_t i = 0; i < count; ++i) {
    if (!keep(*gen)) continue;
    float v = std::ldexp(mant(*gen), exponent(*gen));
    if (specials) {
      const int s = special(*gen);
      if (s < 5) v = std::ldexp(mant(*gen), -100);  // off the fixed-point grid
      if (s == 5) v = -0.0f;
      if (s == 6) v = INFINITY;
      if (s == 7) v = NAN;
    }
    data[i] = v == 0.0f && !std::signbit(v) ? 1.0f : v;
  }
  return data;
}

struct PipelineStats {
  size_t entries = 0, peeled = 0, stuck = 0, off_grid = 0;
};

// HlcCodec::allreduce_sum with the collectives replaced by host sums over the simulated ranks; each
// device stage is compared with the CPU stage on the same inputs.
PipelineStats run_pipeline(size_t count, double density, int ranks, double ratio, bool specials,
                           uint64_t seed) {
  SCOPED_TRACE("count " + std::to_string(count) + ", density " + std::to_string(density) + ", ranks " +
               std::to_string(ranks) + ", ratio " + std::to_string(ratio));
  const uint64_t hash_seed = 0x5eed0f41cull;
  std::mt19937_64 gen(seed);
  std::vector<std::vector<float>> data(ranks);
  std::vector<std::unique_ptr<DeviceArray<float>>> d_data;
  for (int r = 0; r < ranks; ++r) {
    data[r] = sparse_bucket(count, density, specials, &gen);
    d_data.push_back(std::make_unique<DeviceArray<float>>(data[r]));
  }
  Stream stream;
  PipelineStats stats;

  // Round 1: head.
  float max_abs = 0.0f;
  DeviceArray<int64_t> d_head(2);
  for (int r = 0; r < ranks; ++r) {
    int64_t nnz = 0;
    float mine = 0.0f;
    for (float v : data[r]) {
      nnz += v != 0.0f;
      if (std::isfinite(v)) mine = std::max(mine, std::fabs(v));
    }
    CK(hlc_cuda_head(d_data[r]->get(), count, d_head.get(), stream));
    EXPECT_SAME_BITS(d_head.download(), (std::vector<int64_t>{nnz, float_slot(mine)}));
    max_abs = std::max(max_abs, mine);
  }

  // Round 2: union counters, summed; then the support.
  const size_t nwords = union_words(count, ranks);
  std::vector<int64_t> words_sum(nwords, 0);
  DeviceArray<int64_t> d_words(nwords);
  for (int r = 0; r < ranks; ++r) {
    std::vector<int64_t> words(nwords);
    pack_nonzero(data[r].data(), count, ranks, words.data());
    CK(hlc_cuda_pack_nonzero(d_data[r]->get(), count, ranks, d_words.get(), stream));
    EXPECT_SAME_BITS(d_words.download(), words);
    for (size_t w = 0; w < nwords; ++w) words_sum[w] += words[w];
  }
  d_words.upload(words_sum);
  const std::vector<uint32_t> support = unpack_support(words_sum.data(), count, ranks);
  const size_t entries = support.size();
  stats.entries = entries;
  DeviceArray<uint32_t> d_support(count), d_num(1);
  CK(hlc_cuda_unpack_support(d_words.get(), count, ranks, d_support.get(), d_num.get(), stream));
  EXPECT_SAME_BITS(d_support.download(device_count(d_num)), support);
  if (entries == 0) return stats;

  // Round 3: layout on the host, encode per rank, cells summed.
  const SketchLayout layout = build_layout(support, ratio, hash_seed);
  const int scale =
      fixed_scale(max_abs, static_cast<uint64_t>(ranks) * std::max<uint32_t>(1, layout.max_load));
  DeviceArray<uint32_t> d_cell(layout.cell);
  DeviceArray<uint8_t> d_negative(layout.negative);
  DeviceArray<int64_t> d_cells(layout.cells + ranks);
  std::vector<std::unique_ptr<DeviceArray<int64_t>>> d_fixed;
  DeviceArray<uint8_t> d_off_flags(entries);
  std::vector<uint64_t> cells_sum(layout.cells + ranks, 0);
  std::vector<std::vector<int64_t>> mine(ranks, std::vector<int64_t>(entries, 0));
  std::vector<uint32_t> off_grid;  // union of the ranks' off-grid positions, as the allgather
  for (int r = 0; r < ranks; ++r) {
    std::vector<int64_t> cells(layout.cells + ranks, 0);
    std::vector<uint32_t> off_mine;
    for (size_t k = 0; k < entries; ++k) {
      const float v = data[r][support[k]];
      if (v == 0.0f) continue;
      if (float_to_fixed(v, scale, &mine[r][k])) {
        sketch_add(layout, k, mine[r][k], cells.data());
      } else {
        off_mine.push_back(support[k]);
      }
    }
    cells[layout.cells + r] = static_cast<int64_t>(off_mine.size());
    d_fixed.push_back(std::make_unique<DeviceArray<int64_t>>(entries));
    d_cells.zero();
    CK(hlc_cuda_encode(d_data[r]->get(), d_support.get(), entries, d_cell.get(), d_negative.get(), scale,
                       d_cells.get(), d_fixed[r]->get(), d_off_flags.get(), d_cells.get() + layout.cells + r,
                       stream));
    const std::vector<int64_t> dev_cells = d_cells.download();
    EXPECT_SAME_BITS(dev_cells, cells);
    EXPECT_SAME_BITS(d_fixed[r]->download(), mine[r]);
    DeviceArray<uint32_t> d_off(entries);
    CK(hlc_cuda_select(d_off_flags.get(), 1, entries, d_support.get(), d_off.get(), d_num.get(), stream));
    EXPECT_SAME_BITS(d_off.download(device_count(d_num)), off_mine);
    off_grid.insert(off_grid.end(), off_mine.begin(), off_mine.end());
    for (size_t c = 0; c < cells_sum.size(); ++c) cells_sum[c] += static_cast<uint64_t>(dev_cells[c]);
  }
  std::sort(off_grid.begin(), off_grid.end());
  off_grid.erase(std::unique(off_grid.begin(), off_grid.end()), off_grid.end());
  stats.off_grid = off_grid.size();

  // Peel: recovered set, sums and the cells left over.
  std::vector<int64_t> cells(cells_sum.begin(), cells_sum.end());
  d_cells.upload(cells);
  std::vector<int64_t> sums(entries, 0);
  std::vector<uint8_t> recovered;
  const size_t peeled = peel(layout, entries, cells.data(), sums.data(), &recovered);
  stats.peeled = peeled;
  DeviceArray<int64_t> d_sums(entries);
  DeviceArray<uint8_t> d_recovered(entries);
  d_sums.zero();
  size_t dev_peeled = 0;
  CK(hlc_cuda_peel(d_cell.get(), d_negative.get(), entries, layout.cells, d_cells.get(), d_sums.get(),
                   d_recovered.get(), &dev_peeled, stream));
  EXPECT_EQ(dev_peeled, peeled);
  EXPECT_SAME_BITS(d_recovered.download(), recovered);
  EXPECT_SAME_BITS(d_sums.download(), sums);
  EXPECT_SAME_BITS(d_cells.download(), cells);

  // Off-grid entries leave the integer fallback; the rest that did not peel is summed exactly.
  DeviceArray<uint32_t> d_off_grid(std::max<size_t>(1, off_grid.size()));
  d_off_grid.upload(off_grid);
  for (uint32_t pos : off_grid) {
    recovered[std::lower_bound(support.begin(), support.end(), pos) - support.begin()] = 2;
  }
  CK(hlc_cuda_mark_positions(d_support.get(), entries, d_off_grid.get(), off_grid.size(), 2,
                             d_recovered.get(), stream));
  EXPECT_SAME_BITS(d_recovered.download(), recovered);
  std::vector<uint32_t> stuck;
  for (size_t k = 0; k < entries; ++k) {
    if (!recovered[k]) stuck.push_back(static_cast<uint32_t>(k));
  }
  stats.stuck = stuck.size();
  DeviceArray<uint32_t> d_stuck(entries);
  CK(hlc_cuda_select(d_recovered.get(), 0, entries, nullptr, d_stuck.get(), d_num.get(), stream));
  EXPECT_SAME_BITS(d_stuck.download(device_count(d_num)), stuck);
  std::vector<uint64_t> vals(stuck.size(), 0);
  DeviceArray<int64_t> d_vals(stuck.size());
  for (int r = 0; r < ranks; ++r) {
    std::vector<int64_t> expect(stuck.size());
    for (size_t j = 0; j < stuck.size(); ++j) expect[j] = mine[r][stuck[j]];
    CK(hlc_cuda_gather(d_fixed[r]->get(), d_stuck.get(), stuck.size(), d_vals.get(), stream));
    const std::vector<int64_t> got = d_vals.download();
    EXPECT_SAME_BITS(got, expect);
    for (size_t j = 0; j < stuck.size(); ++j) vals[j] += static_cast<uint64_t>(got[j]);
  }
  for (size_t j = 0; j < stuck.size(); ++j) sums[stuck[j]] = static_cast<int64_t>(vals[j]);
  d_vals.upload(std::vector<int64_t>(vals.begin(), vals.end()));
  CK(hlc_cuda_scatter(d_vals.get(), d_stuck.get(), stuck.size(), d_sums.get(), stream));
  EXPECT_SAME_BITS(d_sums.download(), sums);

  // Off-grid floats summed in rank order (the float allreduce), then the final scatter.
  std::vector<float> off_vals(off_grid.size(), 0.0f);
  DeviceArray<float> d_off_vals(off_grid.size());
  for (int r = 0; r < ranks; ++r) {
    std::vector<float> expect(off_grid.size());
    for (size_t j = 0; j < off_grid.size(); ++j) expect[j] = data[r][off_grid[j]];
    CK(hlc_cuda_gather(d_data[r]->get(), d_off_grid.get(), off_grid.size(), d_off_vals.get(), stream));
    const std::vector<float> got = d_off_vals.download();
    EXPECT_SAME_BITS(got, expect);
    for (size_t j = 0; j < off_grid.size(); ++j) off_vals[j] = r == 0 ? got[j] : off_vals[j] + got[j];
  }
  d_off_vals.upload(off_vals);
  std::vector<float> bucket(count, 0.0f);
  for (size_t k = 0; k < entries; ++k) bucket[support[k]] = fixed_to_float(sums[k], scale);
  for (size_t j = 0; j < off_grid.size(); ++j) bucket[off_grid[j]] = off_vals[j];
  DeviceArray<float> d_bucket(count);
  CK(cudaMemset(d_bucket.get(), 0xff, count * sizeof(float)));  // NaN garbage: all must be written
  CK(hlc_cuda_dequantize(d_support.get(), d_sums.get(), entries, scale, d_off_grid.get(), d_off_vals.get(),
                         off_grid.size(), d_bucket.get(), count, stream));
  EXPECT_SAME_BITS(d_bucket.download(), bucket);
  return stats;
}

class HlcCudaPipeline : public ::testing::TestWithParam<std::tuple<double, int>> {};

TEST_P(HlcCudaPipeline, EveryStageMatchesCpu) {
  SKIP_WITHOUT_CUDA();
  const auto [density, ranks] = GetParam();
  // Not a multiple of 1024 nor of any word's field count: partial last block and word.
  const size_t count = 200003;
  const PipelineStats plain = run_pipeline(count, density, ranks, 1.5, false, 11 * ranks + 1);
  EXPECT_GT(plain.entries, 0u);
  EXPECT_EQ(plain.off_grid, 0u);
  const PipelineStats special = run_pipeline(count, density, ranks, 1.5, true, 13 * ranks + 2);
  if (density >= 0.01) EXPECT_GT(special.off_grid, 0u);
}

INSTANTIATE_TEST_SUITE_P(DensityRanks, HlcCudaPipeline,
                         ::testing::Combine(::testing::Values(0.001, 0.01, 0.1, 0.5),
                                            ::testing::Values(1, 2, 3, 4, 8)));

// Sketches too small to peel completely: the device must stall on the same 2-core, so the fallback
// entries (round 5) are the CPU's.
TEST(HlcCuda, SmallSketchStallsOnTheCpuFallbackEntries) {
  SKIP_WITHOUT_CUDA();
  for (double ratio : {0.3, 0.8, 1.1}) {
    for (double density : {0.01, 0.1, 0.5}) {
      const PipelineStats s = run_pipeline(100000, density, 3, ratio, ratio > 1.0, 17);
      EXPECT_GT(s.stuck, 0u) << "ratio " << ratio << ", density " << density;
      EXPECT_GT(s.peeled, 0u) << "ratio " << ratio << ", density " << density;
    }
  }
}

// Near the peeling threshold many rounds run; the set must still be the sequential one.
TEST(HlcCuda, ManyPeelingRoundsMatchCpu) {
  SKIP_WITHOUT_CUDA();
  std::mt19937_64 gen(23);
  std::vector<uint32_t> support;
  for (uint32_t i = 0; i < 1u << 21; ++i) {
    if (gen() % 4 == 0) support.push_back(i);
  }
  Stream stream;
  for (double ratio : {1.15, 1.22, 1.3}) {
    const SketchLayout layout = build_layout(support, ratio, 77);
    std::vector<int64_t> cells(layout.cells, 0);
    for (size_t k = 0; k < support.size(); ++k)
      sketch_add(layout, k, static_cast<int64_t>(gen()), cells.data());
    DeviceArray<uint32_t> d_cell(layout.cell);
    DeviceArray<uint8_t> d_negative(layout.negative);
    DeviceArray<int64_t> d_cells(cells), d_sums(support.size());
    DeviceArray<uint8_t> d_recovered(support.size());
    d_sums.zero();
    std::vector<int64_t> sums(support.size(), 0);
    std::vector<uint8_t> recovered;
    const size_t done = peel(layout, support.size(), cells.data(), sums.data(), &recovered);
    size_t dev_done = 0;
    CK(hlc_cuda_peel(d_cell.get(), d_negative.get(), support.size(), layout.cells, d_cells.get(),
                     d_sums.get(), d_recovered.get(), &dev_done, stream));
    EXPECT_EQ(dev_done, done) << "ratio " << ratio;
    EXPECT_SAME_BITS(d_recovered.download(), recovered);
    EXPECT_SAME_BITS(d_sums.download(), sums);
    EXPECT_SAME_BITS(d_cells.download(), cells);
  }
}

// float_to_fixed over scales and magnitudes (subnormals, overflow, Inf, NaN): the encode's integers,
// off-grid flags and cells equal the CPU's.
TEST(HlcCuda, QuantizeMatchesCpuAcrossScales) {
  SKIP_WITHOUT_CUDA();
  const size_t n = 50000;
  std::vector<uint32_t> support(n);
  for (size_t i = 0; i < n; ++i) support[i] = static_cast<uint32_t>(i);
  const SketchLayout layout = build_layout(support, 1.5, 3);
  std::mt19937_64 gen(29);
  std::vector<float> data(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits = static_cast<uint32_t>(gen());
    if (i % 3 == 0) bits = (bits & 0x807fffffu) | ((127u + static_cast<uint32_t>(gen() % 40) - 20) << 23);
    std::memcpy(&data[i], &bits, sizeof(bits));
  }
  data[0] = 0.0f, data[1] = -0.0f, data[2] = INFINITY, data[3] = -INFINITY, data[4] = NAN;
  data[5] = std::ldexp(1.0f, -149), data[6] = -3.0e38f;
  DeviceArray<float> d_data(data);
  DeviceArray<uint32_t> d_support(support), d_cell(layout.cell);
  DeviceArray<uint8_t> d_negative(layout.negative), d_off(n);
  DeviceArray<int64_t> d_cells(layout.cells + 1), d_fixed(n);
  Stream stream;
  for (int scale : {-130, -60, 0, 1, 20, 62, 100, 149, 150, 180, 210}) {
    std::vector<int64_t> cells(layout.cells + 1, 0), fixed(n, 0);
    std::vector<uint8_t> off(n, 0);
    for (size_t k = 0; k < n; ++k) {
      if (data[k] == 0.0f) continue;
      if (float_to_fixed(data[k], scale, &fixed[k])) {
        sketch_add(layout, k, fixed[k], cells.data());
      } else {
        off[k] = 1;
        ++cells[layout.cells];
      }
    }
    d_cells.zero();
    CK(hlc_cuda_encode(d_data.get(), d_support.get(), n, d_cell.get(), d_negative.get(), scale, d_cells.get(),
                       d_fixed.get(), d_off.get(), d_cells.get() + layout.cells, stream));
    SCOPED_TRACE("scale " + std::to_string(scale));
    EXPECT_SAME_BITS(d_fixed.download(), fixed);
    EXPECT_SAME_BITS(d_off.download(), off);
    EXPECT_SAME_BITS(d_cells.download(), cells);
  }
}

// fixed_to_float over scales that give normal, subnormal, overflowing and vanishing floats.
TEST(HlcCuda, DequantizeMatchesCpuAcrossScales) {
  SKIP_WITHOUT_CUDA();
  const size_t n = 100000;
  std::mt19937_64 gen(31);
  std::vector<uint32_t> positions(n);
  for (size_t i = 0; i < n; ++i) positions[i] = static_cast<uint32_t>(i);
  std::vector<int64_t> sums(n);
  for (size_t i = 0; i < n; ++i) {
    const int bits = 1 + static_cast<int>(gen() % 63);
    sums[i] = static_cast<int64_t>(gen() >> (64 - bits)) * ((gen() & 1) ? -1 : 1);
  }
  sums[0] = 0, sums[1] = INT64_MIN, sums[2] = INT64_MAX, sums[3] = 3, sums[4] = -5, sums[5] = 1;
  DeviceArray<uint32_t> d_positions(positions);
  DeviceArray<int64_t> d_sums(sums);
  DeviceArray<float> d_out(n);
  Stream stream;
  for (int scale : {-130, -64, -1, 0, 24, 60, 126, 127, 149, 150, 151, 160, 190, 212, 215}) {
    std::vector<float> expect(n);
    for (size_t i = 0; i < n; ++i) expect[i] = fixed_to_float(sums[i], scale);
    CK(hlc_cuda_dequantize(d_positions.get(), d_sums.get(), n, scale, nullptr, nullptr, 0, d_out.get(), n,
                           stream));
    SCOPED_TRACE("scale " + std::to_string(scale));
    EXPECT_SAME_BITS(d_out.download(), expect);
  }
}

// Field widths from 1 bit (1 rank) to 7 bits (100 ranks); counts that end mid-word.
TEST(HlcCuda, PackAndSupportMatchCpuForEveryFieldWidth) {
  SKIP_WITHOUT_CUDA();
  Stream stream;
  for (int ranks : {1, 2, 3, 4, 5, 7, 8, 15, 16, 31, 100}) {
    for (size_t count : {size_t{1}, size_t{62}, size_t{63}, size_t{64}, size_t{1000}, size_t{77777}}) {
      SCOPED_TRACE(std::to_string(ranks) + " ranks, count " + std::to_string(count));
      std::mt19937_64 gen(ranks * 1000 + count);
      const size_t nwords = union_words(count, ranks);
      std::vector<int64_t> total(nwords, 0);
      DeviceArray<int64_t> d_words(nwords);
      for (int r = 0; r < std::min(ranks, 6); ++r) {
        const std::vector<float> data = sparse_bucket(count, 0.05 * (r + 1), true, &gen);
        std::vector<int64_t> words(nwords);
        pack_nonzero(data.data(), count, ranks, words.data());
        DeviceArray<float> d_data(data);
        CK(hlc_cuda_pack_nonzero(d_data.get(), count, ranks, d_words.get(), stream));
        EXPECT_SAME_BITS(d_words.download(), words);
        for (size_t w = 0; w < nwords; ++w) total[w] += words[w];
      }
      d_words.upload(total);
      DeviceArray<uint32_t> d_support(count), d_num(1);
      CK(hlc_cuda_unpack_support(d_words.get(), count, ranks, d_support.get(), d_num.get(), stream));
      EXPECT_SAME_BITS(d_support.download(device_count(d_num)), unpack_support(total.data(), count, ranks));
    }
  }
}

}  // namespace
}  // namespace dynamix
