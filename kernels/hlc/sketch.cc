// DYNAMIX — count sketch layout and peeling. All arithmetic is integer, so every rank decodes the
// same allreduced cells to the same values whatever order MPI summed them in.
#include "kernels/hlc/sketch.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "framework/core/random.h"

namespace dynamix {
namespace {

// Uniform integer in [0, range) from 32 random bits (multiply-shift, no division).
uint32_t reduce(uint32_t bits, uint32_t range) {
  return static_cast<uint32_t>((static_cast<uint64_t>(bits) * range) >> 32);
}

uint32_t block_cells(size_t entries, double ratio) {
  if (entries == 0) return 0;
  // The slack keeps tiny blocks peelable: with ceil(1.5 * 2) = 3 cells, two entries would both
  // cover all three cells and never peel (measured in docs/COMPRESSION.md).
  const double want = std::ceil(ratio * static_cast<double>(entries)) + kHlcBlockSlack;
  return static_cast<uint32_t>(std::max<double>(kHlcHashes, want));
}

int fields_per_word(int ranks) { return 63 / union_field_bits(ranks); }

}  // namespace

int union_field_bits(int ranks) {
  if (ranks < 1) throw std::invalid_argument("hlc: rank count must be >= 1");
  int bits = 0;
  while ((1ll << bits) <= ranks) ++bits;  // holds 0..ranks
  return bits;
}

size_t union_words(size_t count, int ranks) {
  const size_t per = static_cast<size_t>(fields_per_word(ranks));
  return (count + per - 1) / per;
}

void pack_nonzero(const float* data, size_t count, int ranks, int64_t* words) {
  const int bits = union_field_bits(ranks);
  const size_t per = static_cast<size_t>(fields_per_word(ranks));
  const size_t nwords = union_words(count, ranks);
  for (size_t w = 0; w < nwords; ++w) {
    const size_t begin = w * per;
    const size_t end = std::min(count, begin + per);
    uint64_t word = 0;
    for (size_t i = begin; i < end; ++i) {
      word |= static_cast<uint64_t>(!(data[i] == 0.0f)) << ((i - begin) * bits);
    }
    words[w] = static_cast<int64_t>(word);
  }
}

std::vector<uint32_t> unpack_support(const int64_t* words, size_t count, int ranks) {
  if (count > UINT32_MAX)
    throw std::invalid_argument("hlc: bucket of " + std::to_string(count) + " elements exceeds 2^32");
  const int bits = union_field_bits(ranks);
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  const size_t per = static_cast<size_t>(fields_per_word(ranks));
  const size_t nwords = union_words(count, ranks);
  std::vector<uint32_t> support;
  for (size_t w = 0; w < nwords; ++w) {
    uint64_t word = static_cast<uint64_t>(words[w]);
    for (size_t f = 0; word != 0; ++f, word >>= bits) {
      if (word & mask) support.push_back(static_cast<uint32_t>(w * per + f));
    }
  }
  return support;
}

size_t sketch_cells(const std::vector<uint32_t>& support, double ratio) {
  size_t cells = 0;
  for (size_t k = 0; k < support.size();) {
    const uint32_t block = support[k] / kHlcBlock;
    size_t end = k;
    while (end < support.size() && support[end] / kHlcBlock == block) ++end;
    cells += block_cells(end - k, ratio);
    k = end;
  }
  return cells;
}

SketchLayout build_layout(const std::vector<uint32_t>& support, double ratio, uint64_t seed) {
  if (!(ratio > 0.0)) throw std::invalid_argument("hlc: sketch ratio must be > 0");
  SketchLayout layout;
  layout.cell.resize(support.size() * kHlcHashes);
  layout.negative.resize(support.size());
  size_t base = 0;
  for (size_t k = 0; k < support.size();) {
    const uint32_t block = support[k] / kHlcBlock;
    size_t end = k;
    while (end < support.size() && support[end] / kHlcBlock == block) ++end;
    const uint32_t m = block_cells(end - k, ratio);
    for (; k < end; ++k) {
      // Three distinct cells of this block's range and three signs, from the position and seed only.
      const uint64_t h1 = mix64(seed ^ (static_cast<uint64_t>(support[k]) * 0xd6e8feb86659fd93ull));
      const uint64_t h2 = mix64(h1);
      uint32_t c0 = reduce(static_cast<uint32_t>(h1), m);
      uint32_t c1 = reduce(static_cast<uint32_t>(h1 >> 32), m - 1);
      if (c1 >= c0) ++c1;
      uint32_t c2 = reduce(static_cast<uint32_t>(h2), m - 2);
      const uint32_t lo = std::min(c0, c1), hi = std::max(c0, c1);
      if (c2 >= lo) ++c2;
      if (c2 >= hi) ++c2;
      uint32_t* out = &layout.cell[k * kHlcHashes];
      out[0] = static_cast<uint32_t>(base) + c0;
      out[1] = static_cast<uint32_t>(base) + c1;
      out[2] = static_cast<uint32_t>(base) + c2;
      layout.negative[k] = static_cast<uint8_t>((h2 >> 32) & 0x7u);
    }
    base += m;
  }
  if (base > UINT32_MAX)
    throw std::invalid_argument("hlc: sketch of " + std::to_string(base) + " cells exceeds 2^32");
  layout.cells = base;
  std::vector<uint32_t> load(layout.cells, 0);
  for (uint32_t c : layout.cell) layout.max_load = std::max(layout.max_load, ++load[c]);
  return layout;
}

size_t peel(const SketchLayout& layout, size_t entries, int64_t* cells, int64_t* sums,
            std::vector<uint8_t>* recovered) {
  // Per cell: how many entries are still unknown, and the XOR of their indices (the lone one's id).
  std::vector<uint32_t> unknown(layout.cells, 0);
  std::vector<uint32_t> ids(layout.cells, 0);
  for (size_t k = 0; k < entries; ++k) {
    for (int h = 0; h < kHlcHashes; ++h) {
      const uint32_t c = layout.cell[k * kHlcHashes + h];
      ++unknown[c];
      ids[c] ^= static_cast<uint32_t>(k);
    }
  }
  std::vector<uint32_t> ready;
  for (size_t c = 0; c < layout.cells; ++c) {
    if (unknown[c] == 1) ready.push_back(static_cast<uint32_t>(c));
  }
  recovered->assign(entries, 0);
  auto* ucells = reinterpret_cast<uint64_t*>(cells);
  size_t done = 0;
  while (!ready.empty()) {
    const uint32_t c = ready.back();
    ready.pop_back();
    if (unknown[c] != 1) continue;  // emptied by an earlier peel
    const uint32_t k = ids[c];
    const uint32_t* kc = &layout.cell[static_cast<size_t>(k) * kHlcHashes];
    const uint8_t neg = layout.negative[k];
    int h_here = 0;
    while (kc[h_here] != c) ++h_here;
    const uint64_t value = ((neg >> h_here) & 1) ? uint64_t{0} - ucells[c] : ucells[c];
    sums[k] = static_cast<int64_t>(value);
    (*recovered)[k] = 1;
    ++done;
    for (int h = 0; h < kHlcHashes; ++h) {
      const uint32_t o = kc[h];
      ucells[o] -= ((neg >> h) & 1) ? uint64_t{0} - value : value;
      ids[o] ^= k;
      if (--unknown[o] == 1) ready.push_back(o);
    }
  }
  return done;
}

}  // namespace dynamix
