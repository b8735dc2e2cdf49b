// DYNAMIX — homomorphic count sketch for sparse gradients (arXiv:2402.07529), CPU reference:
// union-of-supports counters, block-local 3-hash count sketch on int64 cells, peeling decode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dynamix {

constexpr size_t kHlcBlock = 1024;  // elements per block; a block's entries hash only into its cells
constexpr int kHlcHashes = 3;
constexpr int kHlcBlockSlack = 4;  // extra cells per non-empty block

// --- Union of supports: per-element counters packed into int64 words, summed across ranks. ---
// Each element gets a field wide enough to count `ranks` (no carry between fields, sign bit unused).
int union_field_bits(int ranks);
size_t union_words(size_t count, int ranks);
// Writes union_words() words: field i = 1 where data[i] != 0 (NaN counts as non-zero).
void pack_nonzero(const float* data, size_t count, int ranks, int64_t* words);
// Sorted positions whose summed counter is non-zero.
std::vector<uint32_t> unpack_support(const int64_t* words, size_t count, int ranks);

// --- Sketch layout: which cells each union entry touches, known identically on every rank. ---
// Cells of one block: 0 if the block has no entry, else ceil(ratio * entries in block) + slack.
size_t sketch_cells(const std::vector<uint32_t>& support, double ratio);

struct SketchLayout {
  size_t cells = 0;               // total cells over all blocks
  uint32_t max_load = 0;          // most entries sharing one cell (sizes the fixed-point headroom)
  std::vector<uint32_t> cell;     // kHlcHashes distinct global cell indices per support entry
  std::vector<uint8_t> negative;  // bit h: hash h of the entry carries sign -1
};
SketchLayout build_layout(const std::vector<uint32_t>& support, double ratio, uint64_t seed);

// Adds sign * value of support entry `entry` into its cells (two's complement wrap-around).
inline void sketch_add(const SketchLayout& layout, size_t entry, int64_t value, int64_t* cells) {
  const uint32_t* c = &layout.cell[entry * kHlcHashes];
  const uint8_t neg = layout.negative[entry];
  for (int h = 0; h < kHlcHashes; ++h) {
    const uint64_t v = static_cast<uint64_t>(value);
    uint64_t& cell = reinterpret_cast<uint64_t&>(cells[c[h]]);
    cell += ((neg >> h) & 1) ? uint64_t{0} - v : v;
  }
}

// Peeling decode of summed `cells` (consumed). For each recovered entry k, recovered[k] = 1 and
// sums[k] = the exact integer sum of that entry over ranks. Returns the number recovered.
size_t peel(const SketchLayout& layout, size_t entries, int64_t* cells, int64_t* sums,
            std::vector<uint8_t>* recovered);

}  // namespace dynamix
