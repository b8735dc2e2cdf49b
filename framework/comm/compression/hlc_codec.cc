// DYNAMIX — hlc allreduce driver: union, sketch, peel, exact fallback.
#include "framework/comm/compression/hlc_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "framework/core/error.h"
#include "kernels/hlc/fixed_point.h"
#include "kernels/hlc/sketch.h"

namespace dynamix {
namespace hlc_detail {

int64_t float_slot(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return static_cast<int64_t>(bits);
}

float slot_float(int64_t slot) {
  const auto bits = static_cast<uint32_t>(slot);
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

void read_head(const int64_t* head, int ranks, size_t* max_nnz, float* max_abs) {
  *max_nnz = 0;
  *max_abs = 0.0f;
  for (int r = 0; r < ranks; ++r) {
    *max_nnz = std::max(*max_nnz, static_cast<size_t>(head[2 * r]));
    *max_abs = std::max(*max_abs, slot_float(head[2 * r + 1]));
  }
}

std::vector<uint32_t> merge_positions(std::vector<uint32_t> all) {
  all.erase(std::remove(all.begin(), all.end(), UINT32_MAX), all.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

}  // namespace hlc_detail

using hlc_detail::float_slot;

HlcCodec::HlcCodec(const CodecOptions& options) : options_(options) {
  DYNAMIX_CHECK(options_.hlc_ratio > 0.0, "comm.compression=hlc: sketch ratio must be > 0 (got " +
                                              std::to_string(options_.hlc_ratio) + ")");
}

#if DYNAMIX_HLC_CUDA
bool HlcCodec::accepts_device_memory() const { return true; }
#else
bool HlcCodec::accepts_device_memory() const { return false; }
void HlcCodec::release(Device*) {}  // never allocated without the CUDA kernels
#endif

bool HlcCodec::dense_after_head(size_t count, int ranks, size_t max_nnz) const {
  const double budget = options_.hlc_max_bytes_fraction * 4.0 * static_cast<double>(count);
  const double lower_bytes = 8.0 * (static_cast<double>(union_words(count, ranks)) + ranks +
                                    options_.hlc_ratio * static_cast<double>(max_nnz));
  return options_.hlc_auto && lower_bytes >= budget;
}

bool HlcCodec::dense_after_union(size_t count, int ranks, size_t ncells) const {
  const double budget = options_.hlc_max_bytes_fraction * 4.0 * static_cast<double>(count);
  return options_.hlc_auto && 8.0 * static_cast<double>(ncells + ranks) >= budget;
}

void HlcCodec::dense(float* data, size_t count, Communicator& comm, CodecStats* stats) {
  comm.allreduce_sum(data, count, DType::kFloat32);
  stats->path = "dense";
  stats->bytes_sent += 4 * count;
  ++stats->rounds;
}

std::vector<uint32_t> HlcCodec::gather_off_grid(const std::vector<uint32_t>& mine, const int64_t* counts,
                                                Communicator& comm, CodecStats* stats) {
  const int ranks = comm.size();
  size_t widest = 0;
  for (int r = 0; r < ranks; ++r) widest = std::max(widest, static_cast<size_t>(counts[r]));
  std::vector<uint32_t> send(widest, UINT32_MAX);
  std::copy(mine.begin(), mine.end(), send.begin());
  std::vector<uint32_t> all(widest * ranks);
  comm.allgather(send.data(), widest * sizeof(uint32_t), all.data());
  stats->bytes_sent += widest * sizeof(uint32_t);
  ++stats->rounds;
  return hlc_detail::merge_positions(std::move(all));
}

void HlcCodec::allreduce_sum(float* data, size_t count, Communicator& comm, CodecStats* out_stats) {
  CodecStats local_stats;
  CodecStats* stats = out_stats ? out_stats : &local_stats;
  *stats = CodecStats{};
  stats->path = "hlc";
  stats->count = count;
  stats->dense_bytes = 4 * count;
  if (count == 0) return;
#if DYNAMIX_HLC_CUDA
  int device = -1;
  if (is_device_memory(data, &device)) return allreduce_sum_device(data, count, device, comm, stats);
#endif
  const int ranks = comm.size();
  const int rank = comm.rank();

  // Round 1: every rank's non-zero count and largest finite magnitude, each in its own slot.
  size_t nnz = 0;
  float max_abs = 0.0f;
  for (size_t i = 0; i < count; ++i) {
    nnz += data[i] != 0.0f;
    if (std::isfinite(data[i])) max_abs = std::max(max_abs, std::fabs(data[i]));
  }
  std::vector<int64_t> head(2 * static_cast<size_t>(ranks), 0);
  head[2 * rank] = static_cast<int64_t>(nnz);
  head[2 * rank + 1] = float_slot(max_abs);
  comm.allreduce_sum(head.data(), head.size(), DType::kInt64);
  stats->bytes_sent += head.size() * sizeof(int64_t);
  ++stats->rounds;
  size_t max_nnz = 0;
  hlc_detail::read_head(head.data(), ranks, &max_nnz, &max_abs);
  const size_t nwords = union_words(count, ranks);
  stats->union_count = max_nnz;  // a lower bound until the union is known
  stats->union_density = static_cast<double>(max_nnz) / static_cast<double>(count);
  if (dense_after_head(count, ranks, max_nnz)) return dense(data, count, comm, stats);

  // Round 2: union of supports.
  words_.resize(nwords);
  pack_nonzero(data, count, ranks, words_.data());
  comm.allreduce_sum(words_.data(), nwords, DType::kInt64);
  stats->bytes_sent += nwords * sizeof(int64_t);
  ++stats->rounds;
  const std::vector<uint32_t> support = unpack_support(words_.data(), count, ranks);
  const size_t entries = support.size();
  stats->union_count = entries;
  stats->union_density = static_cast<double>(entries) / static_cast<double>(count);
  const size_t ncells = sketch_cells(support, options_.hlc_ratio);
  if (dense_after_union(count, ranks, ncells)) return dense(data, count, comm, stats);

  // Round 3: the sketch of this rank's values in fixed point, plus its off-grid count.
  const SketchLayout layout = build_layout(support, options_.hlc_ratio, options_.hlc_seed);
  const int scale =
      fixed_scale(max_abs, static_cast<uint64_t>(ranks) * std::max<uint32_t>(1, layout.max_load));
  cells_.assign(layout.cells + ranks, 0);
  std::vector<int64_t> mine(entries, 0);  // this rank's fixed-point values, 0 where zero or off grid
  std::vector<uint32_t> off_grid_mine;
  for (size_t k = 0; k < entries; ++k) {
    const float v = data[support[k]];
    if (v == 0.0f) continue;
    if (float_to_fixed(v, scale, &mine[k])) {
      sketch_add(layout, k, mine[k], cells_.data());
    } else {
      off_grid_mine.push_back(support[k]);
    }
  }
  cells_[layout.cells + rank] = static_cast<int64_t>(off_grid_mine.size());
  comm.allreduce_sum(cells_.data(), cells_.size(), DType::kInt64);
  stats->bytes_sent += cells_.size() * sizeof(int64_t);
  ++stats->rounds;
  int64_t off_grid_total = 0;
  for (int r = 0; r < ranks; ++r) off_grid_total += cells_[layout.cells + r];

  std::vector<int64_t> sums(entries, 0);
  std::vector<uint8_t> recovered;
  const size_t peeled = peel(layout, entries, cells_.data(), sums.data(), &recovered);
  stats->peeled_fraction = entries ? static_cast<double>(peeled) / static_cast<double>(entries) : 1.0;

  // Off-grid entries are summed in float; mark them so the integer fallback skips them.
  std::vector<uint32_t> off_grid;
  std::vector<size_t> off_grid_entries;
  if (off_grid_total > 0) {
    off_grid = gather_off_grid(off_grid_mine, cells_.data() + layout.cells, comm, stats);
    for (uint32_t pos : off_grid) {
      const size_t k = std::lower_bound(support.begin(), support.end(), pos) - support.begin();
      off_grid_entries.push_back(k);
      recovered[k] = 2;
    }
  }
  stats->off_grid_count = off_grid.size();

  // Round 5: entries that did not peel, summed exactly in the same fixed point, in support order.
  std::vector<size_t> stuck;
  for (size_t k = 0; k < entries; ++k) {
    if (!recovered[k]) stuck.push_back(k);
  }
  if (!stuck.empty()) {
    std::vector<int64_t> vals(stuck.size());
    for (size_t j = 0; j < stuck.size(); ++j) vals[j] = mine[stuck[j]];
    comm.allreduce_sum(vals.data(), vals.size(), DType::kInt64);
    stats->bytes_sent += vals.size() * sizeof(int64_t);
    ++stats->rounds;
    for (size_t j = 0; j < stuck.size(); ++j) sums[stuck[j]] = vals[j];
  }
  stats->fallback_count = stuck.size() + off_grid.size();

  // Round 6: off-grid positions as a dense float SUM (the full value of every rank there).
  std::vector<float> off_vals(off_grid.size());
  for (size_t j = 0; j < off_grid.size(); ++j) off_vals[j] = data[off_grid[j]];
  if (!off_vals.empty()) {
    comm.allreduce_sum(off_vals.data(), off_vals.size(), DType::kFloat32);
    stats->bytes_sent += off_vals.size() * sizeof(float);
    ++stats->rounds;
  }

  // Scatter: zero outside the union (+0 on every rank), one rounding per grid entry.
  std::fill(data, data + count, 0.0f);
  for (size_t k = 0; k < entries; ++k) data[support[k]] = fixed_to_float(sums[k], scale);
  for (size_t j = 0; j < off_grid.size(); ++j) data[off_grid[j]] = off_vals[j];
}

}  // namespace dynamix
