// DYNAMIX — fixed point for exact sketch sums: integers add associatively, so every reduction
// order gives the same cells, and one final rounding gives the correctly rounded float sum.
#include "kernels/hlc/fixed_point.h"

#include <cmath>

namespace dynamix {
namespace {

int ceil_log2(uint64_t x) {
  int bits = 0;
  while ((uint64_t{1} << bits) < x) ++bits;
  return bits;
}

}  // namespace

int fixed_scale(float max_abs, uint64_t headroom) {
  const int room = ceil_log2(headroom < 1 ? 1 : headroom);
  if (!(max_abs > 0.0f) || !std::isfinite(max_abs)) return 0;
  int exp = 0;
  std::frexp(max_abs, &exp);  // max_abs < 2^exp
  return 62 - room - exp;
}

bool float_to_fixed(float value, int scale, int64_t* fixed) {
  if (!std::isfinite(value)) return false;
  const double scaled = std::ldexp(static_cast<double>(value), scale);  // exact: float fits a double
  if (!(std::fabs(scaled) < 9.2e18)) return false;
  const double whole = std::trunc(scaled);
  if (whole != scaled || (whole == 0.0 && value != 0.0f)) return false;
  *fixed = static_cast<int64_t>(whole);
  return true;
}

float fixed_to_float(int64_t fixed, int scale) {
  if (fixed == 0) return 0.0f;
  const bool negative = fixed < 0;
  uint64_t mag = negative ? uint64_t{0} - static_cast<uint64_t>(fixed) : static_cast<uint64_t>(fixed);
  // Results below 2^-126 are float subnormals on the absolute grid 2^-149: round there in integers.
  const int sub_shift = scale - 149;
  const bool normal = scale - 126 < 0 || (scale - 126 < 64 && mag >= (uint64_t{1} << (scale - 126)));
  float out;
  if (normal || sub_shift <= 0) {
    // int64 -> float conversion rounds once to nearest even; the power-of-two scaling is then exact.
    out = std::ldexp(static_cast<float>(mag), -scale);
  } else if (sub_shift >= 64) {
    out = 0.0f;  // below half the smallest subnormal (mag < 2^(scale-126) < 2^(sub_shift-1))
  } else {
    const uint64_t kept = mag >> sub_shift;
    const uint64_t rest = mag & ((uint64_t{1} << sub_shift) - 1);
    const uint64_t half = uint64_t{1} << (sub_shift - 1);
    const uint64_t rounded = kept + ((rest > half || (rest == half && (kept & 1))) ? 1 : 0);
    out = std::ldexp(static_cast<float>(rounded), -149);  // rounded <= 2^23: exact
  }
  return negative ? -out : out;
}

}  // namespace dynamix
