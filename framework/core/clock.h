// DYNAMIX — wall-clock intervals on the monotonic clock (header-only, no dependencies).
#pragma once

#include <chrono>

namespace dynamix {

// Seconds from `t0` to now, on the steady clock.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace dynamix
