// DYNAMIX — float <-> fp16 / bf16 by bit manipulation, so the CPU path needs no compiler half type.
#include "kernels/hlc/half.h"

#include <cstring>

namespace dynamix {
namespace {

uint32_t bits_of(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  return x;
}

float float_of(uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof(f));
  return f;
}

// Rounds `value >> shift` to nearest, ties to even.
uint32_t shift_round_even(uint32_t value, int shift) {
  const uint32_t kept = value >> shift;
  const uint32_t rest = value & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

}  // namespace

uint16_t float_to_fp16(float value) {
  uint32_t x = bits_of(value);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u);  // NaN stays quiet NaN
  if (x >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds past the largest half (65504)
  if (x < 0x38800000u) {                        // below 2^-14: half subnormal, unit 2^-24
    if (x <= 0x33000000u) return sign;          // <= 2^-25 rounds to zero (2^-25 is a tie to even 0)
    const uint32_t mant = (x & 0x7fffffu) | 0x800000u;
    const int shift = 126 - static_cast<int>(x >> 23);
    return sign | static_cast<uint16_t>(shift_round_even(mant, shift));
  }
  // Normal: rebias the exponent, round 23 -> 10 mantissa bits (a carry may bump the exponent).
  const uint32_t rebased = x - ((127u - 15u) << 23);
  return sign | static_cast<uint16_t>(shift_round_even(rebased, 13));
}

float fp16_to_float(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exp = (half >> 10) & 0x1fu;
  const uint32_t mant = half & 0x3ffu;
  if (exp == 0) {
    const float mag = static_cast<float>(mant) * 5.9604644775390625e-8f;  // exact: mant * 2^-24
    return sign ? -mag : mag;
  }
  if (exp == 31) return float_of(sign | 0x7f800000u | (mant << 13));
  return float_of(sign | ((exp + 127u - 15u) << 23) | (mant << 13));
}

uint16_t float_to_bf16(float value) {
  const uint32_t x = bits_of(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t bias = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + bias) >> 16);
}

float bf16_to_float(uint16_t half) { return float_of(static_cast<uint32_t>(half) << 16); }

void floats_to_fp16(const float* in, size_t count, uint16_t* out) {
  for (size_t i = 0; i < count; ++i) out[i] = float_to_fp16(in[i]);
}

void fp16s_to_float(const uint16_t* in, size_t count, float* out) {
  for (size_t i = 0; i < count; ++i) out[i] = fp16_to_float(in[i]);
}

void floats_to_bf16(const float* in, size_t count, uint16_t* out) {
  for (size_t i = 0; i < count; ++i) out[i] = float_to_bf16(in[i]);
}

void bf16s_to_float(const uint16_t* in, size_t count, float* out) {
  for (size_t i = 0; i < count; ++i) out[i] = bf16_to_float(in[i]);
}

}  // namespace dynamix
