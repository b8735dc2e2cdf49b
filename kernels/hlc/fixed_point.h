// DYNAMIX — exact float <-> int64 fixed point on a shared power-of-two grid (the hlc sketch cells).
#pragma once

#include <cstdint>

namespace dynamix {

// Scale exponent `s` for a bucket: every finite |v| <= max_abs maps to |v * 2^s| < 2^62 / headroom,
// so sums of up to `headroom` such terms (ranks x cell load) never overflow int64.
int fixed_scale(float max_abs, uint64_t headroom);

// v * 2^s as an integer when that is exact (v finite and on the grid); false otherwise.
bool float_to_fixed(float value, int scale, int64_t* fixed);

// Correctly rounded (to nearest even, subnormals included) float of `fixed * 2^-scale`.
float fixed_to_float(int64_t fixed, int scale);

}  // namespace dynamix
