// DYNAMIX — small string helpers every folder may use (header-only).
#pragma once

#include <cstdio>
#include <string>

namespace dynamix {

// One number in a printf format with a single conversion ("%.4f", "%.0f", "%.1f%%").
inline std::string format_number(const char* spec, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), spec, v);
  return buf;
}

}  // namespace dynamix
