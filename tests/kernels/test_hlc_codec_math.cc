// DYNAMIX — single-process tests of the hlc codec math: half casts, fixed point, union, sketch, peel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "kernels/hlc/fixed_point.h"
#include "kernels/hlc/half.h"
#include "kernels/hlc/sketch.h"

namespace dynamix {
namespace {

float next_up(float f) { return std::nextafter(f, INFINITY); }
float next_down(float f) { return std::nextafter(f, -INFINITY); }

TEST(HlcHalf, Fp16RoundTripsEveryEncoding) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = fp16_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_fp16(f), h) << "fp16 bits " << h;
  }
}

TEST(HlcHalf, Fp16KnownValues) {
  EXPECT_EQ(float_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_fp16(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7c00);                      // ties away from the max go to inf
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -25)), 0x0000);         // tie to even zero
  EXPECT_EQ(float_to_fp16(std::ldexp(3.0f, -25)), 0x0002);         // 1.5 units: tie to even 2
  EXPECT_EQ(float_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(float_to_fp16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie to even (up)
  EXPECT_TRUE(std::isnan(fp16_to_float(float_to_fp16(NAN))));
}

// Random floats land on one of their two fp16 neighbours, the nearer one.
TEST(HlcHalf, Fp16AndBf16RoundToNearest) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> ex(-26, 16);
  for (int i = 0; i < 200000; ++i) {
    const float f = std::ldexp(mant(gen), ex(gen));
    for (bool bf : {false, true}) {
      const uint16_t h = bf ? float_to_bf16(f) : float_to_fp16(f);
      const float r = bf ? bf16_to_float(h) : fp16_to_float(h);
      if (std::isinf(r)) continue;
      const float up = bf ? bf16_to_float(h + 1) : fp16_to_float(h + 1);
      const float down = h & 0x7fff ? (bf ? bf16_to_float(h - 1) : fp16_to_float(h - 1)) : -r;
      const double err = std::fabs(static_cast<double>(f) - r);
      EXPECT_LE(err, std::fabs(static_cast<double>(f) - up)) << f << (bf ? " bf16" : " fp16");
      EXPECT_LE(err, std::fabs(static_cast<double>(f) - down)) << f << (bf ? " bf16" : " fp16");
    }
  }
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie to even
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(3.0f, -8)), 0x3f82);
}

TEST(HlcFixedPoint, ScaleLeavesHeadroom) {
  const int s = fixed_scale(3.0f, 4 * 10);
  int64_t q = 0;
  ASSERT_TRUE(float_to_fixed(-3.0f, s, &q));
  EXPECT_LT(std::fabs(static_cast<double>(q)) * 40.0, std::ldexp(1.0, 63));
  EXPECT_GE(std::fabs(static_cast<double>(q)) * 40.0, std::ldexp(1.0, 59));  // not wastefully small
  EXPECT_FALSE(float_to_fixed(INFINITY, s, &q));
  EXPECT_FALSE(float_to_fixed(NAN, s, &q));
  EXPECT_FALSE(float_to_fixed(1e-30f, s, &q));  // far below the grid
  ASSERT_TRUE(float_to_fixed(std::ldexp(1.0f, -20), s, &q));
  EXPECT_EQ(fixed_to_float(q, s), std::ldexp(1.0f, -20));
}

// fixed_to_float is the nearest float (ties to even) of T * 2^-s, checked against neighbours.
TEST(HlcFixedPoint, FixedToFloatRoundsOnce) {
  std::mt19937_64 gen(3);
  for (int i = 0; i < 100000; ++i) {
    const int bits = 1 + static_cast<int>(gen() % 62);
    const int64_t t = static_cast<int64_t>(gen() >> (64 - bits)) * ((gen() & 1) ? -1 : 1);
    const int s = static_cast<int>(gen() % 60);
    const float r = fixed_to_float(t, s);
    const long double exact = std::ldexp(static_cast<long double>(t), -s);
    const long double err = std::fabs(exact - r);
    EXPECT_LE(err, std::fabs(exact - static_cast<long double>(next_up(r))));
    EXPECT_LE(err, std::fabs(exact - static_cast<long double>(next_down(r))));
  }
  // Ties to even at 24 significant bits: 2^24 + 1 -> 2^24, 2^24 + 3 -> 2^24 + 4.
  EXPECT_EQ(fixed_to_float((int64_t{1} << 24) + 1, 0), 16777216.0f);
  EXPECT_EQ(fixed_to_float((int64_t{1} << 24) + 3, 0), 16777220.0f);
  // Subnormal results round on the 2^-149 grid: 1.5 * 2^-149 -> 2^-148 (even), 0.5 * 2^-149 -> 0.
  EXPECT_EQ(fixed_to_float(3, 150), std::ldexp(1.0f, -148));
  EXPECT_EQ(fixed_to_float(1, 150), 0.0f);
  EXPECT_EQ(fixed_to_float(-5, 151), -std::ldexp(1.0f, -149));  // 1.25 units -> 1
  EXPECT_EQ(fixed_to_float(int64_t{3} << 40, 190), std::ldexp(1.0f, -148));
}

TEST(HlcUnion, PackedCountersSumToTheUnion) {
  for (int ranks : {1, 2, 3, 4, 7, 8}) {
    const size_t n = 5000;
    std::mt19937 gen(ranks);
    std::vector<int64_t> total(union_words(n, ranks), 0);
    std::set<uint32_t> expect;
    for (int r = 0; r < ranks; ++r) {
      std::vector<float> data(n, 0.0f);
      for (int j = 0; j < 300; ++j) {
        const uint32_t p = gen() % n;
        data[p] = 1.0f + static_cast<float>(r);
        expect.insert(p);
      }
      data[n - 1] = 2.0f;  // every rank: the field must hold `ranks` without carrying
      expect.insert(static_cast<uint32_t>(n - 1));
      std::vector<int64_t> words(total.size());
      pack_nonzero(data.data(), n, ranks, words.data());
      for (size_t w = 0; w < words.size(); ++w) total[w] += words[w];
    }
    const std::vector<uint32_t> support = unpack_support(total.data(), n, ranks);
    EXPECT_EQ(std::vector<uint32_t>(expect.begin(), expect.end()), support) << ranks << " ranks";
  }
  EXPECT_EQ(union_field_bits(2), 2);
  EXPECT_EQ(union_field_bits(4), 3);
  EXPECT_EQ(union_words(31 * 4, 2), 4u);
}

std::vector<uint32_t> random_support(size_t n, double density, std::mt19937* gen) {
  std::bernoulli_distribution keep(density);
  std::vector<uint32_t> support;
  for (size_t i = 0; i < n; ++i) {
    if (keep(*gen)) support.push_back(static_cast<uint32_t>(i));
  }
  return support;
}

TEST(HlcSketch, LayoutIsDeterministicWithDistinctCellsInTheBlock) {
  std::mt19937 gen(1);
  const std::vector<uint32_t> support = random_support(20000, 0.05, &gen);
  const SketchLayout a = build_layout(support, 1.5, 42);
  const SketchLayout b = build_layout(support, 1.5, 42);
  const SketchLayout c = build_layout(support, 1.5, 43);
  EXPECT_EQ(a.cell, b.cell);
  EXPECT_EQ(a.negative, b.negative);
  EXPECT_NE(a.cell, c.cell);
  EXPECT_EQ(a.cells, sketch_cells(support, 1.5));
  for (size_t k = 0; k < support.size(); ++k) {
    const uint32_t* cell = &a.cell[k * kHlcHashes];
    EXPECT_NE(cell[0], cell[1]);
    EXPECT_NE(cell[0], cell[2]);
    EXPECT_NE(cell[1], cell[2]);
  }
  // Entries of different blocks never share a cell.
  std::vector<int64_t> owner(a.cells, -1);
  for (size_t k = 0; k < support.size(); ++k) {
    for (int h = 0; h < kHlcHashes; ++h) {
      int64_t& o = owner[a.cell[k * kHlcHashes + h]];
      if (o < 0) o = support[k] / kHlcBlock;
      EXPECT_EQ(o, support[k] / kHlcBlock);
    }
  }
}

// Several simulated ranks add their sketches (the homomorphism); peeling returns exact sums.
TEST(HlcSketch, SummedSketchesPeelToExactSums) {
  for (double density : {0.001, 0.01, 0.1, 0.5}) {
    std::mt19937 gen(static_cast<unsigned>(density * 1e4));
    const size_t n = 40000;
    const int ranks = 3;
    const std::vector<uint32_t> support = random_support(n, density, &gen);
    const SketchLayout layout = build_layout(support, 1.5, 9);
    std::vector<int64_t> cells(layout.cells, 0), expect(support.size(), 0);
    std::uniform_int_distribution<int64_t> val(-(int64_t{1} << 58), int64_t{1} << 58);
    for (int r = 0; r < ranks; ++r) {
      for (size_t k = 0; k < support.size(); ++k) {
        if (gen() % 2) continue;  // ranks hold different subsets of the union
        const int64_t v = val(gen);
        expect[k] += v;
        sketch_add(layout, k, v, cells.data());
      }
    }
    std::vector<int64_t> sums(support.size(), 0);
    std::vector<uint8_t> recovered;
    const size_t done = peel(layout, support.size(), cells.data(), sums.data(), &recovered);
    EXPECT_GE(done, support.size() * 9 / 10) << "density " << density;
    for (size_t k = 0; k < support.size(); ++k) {
      if (recovered[k]) EXPECT_EQ(sums[k], expect[k]) << "entry " << k;
    }
    if (done == support.size()) {
      for (int64_t c : cells) EXPECT_EQ(c, 0);  // everything subtracted out
    }
  }
}

TEST(HlcSketch, TinySketchStallsWithoutWrongValues) {
  std::mt19937 gen(5);
  const std::vector<uint32_t> support = random_support(30000, 0.2, &gen);
  const SketchLayout layout = build_layout(support, 0.3, 9);
  std::vector<int64_t> cells(layout.cells, 0), expect(support.size());
  for (size_t k = 0; k < support.size(); ++k) {
    expect[k] = static_cast<int64_t>(gen()) - (int64_t{1} << 31);
    sketch_add(layout, k, expect[k], cells.data());
  }
  std::vector<int64_t> sums(support.size(), 0);
  std::vector<uint8_t> recovered;
  const size_t done = peel(layout, support.size(), cells.data(), sums.data(), &recovered);
  EXPECT_LT(done, support.size() / 2);
  for (size_t k = 0; k < support.size(); ++k) {
    if (recovered[k]) EXPECT_EQ(sums[k], expect[k]);
  }
}

}  // namespace
}  // namespace dynamix
