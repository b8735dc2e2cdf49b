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

}  // namespace dynamix
