// DYNAMIX — small statistics every folder may use (header-only, no dependencies).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace dynamix {

// The middle value (the mean of the two middle ones for an even count); NaN when empty.
inline double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Relative standard error of a mean from the sum and the sum of squares of n values:
// sd / (sqrt(n) · mean), 0 when it cannot be estimated (n < 2 or a non-positive mean).
inline double relative_standard_error(double sum, double sum_sq, double n) {
  if (n < 2 || !(sum > 0)) return 0;
  const double mean = sum / n;
  const double variance = std::max(0.0, (sum_sq - n * mean * mean) / (n - 1));
  return std::sqrt(variance / n) / mean;
}

}  // namespace dynamix
