// DYNAMIX — small string helpers every folder may use (header-only).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace dynamix {

// One number in a printf format with a single conversion ("%.4f", "%.0f", "%.1f%%").
inline std::string format_number(const char* spec, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), spec, v);
  return buf;
}

// A plan as the logs print it: "56,43,20,9".
inline std::string join_plan(const std::vector<int32_t>& plan) {
  std::string s;
  for (size_t i = 0; i < plan.size(); ++i) s += (i ? "," : "") + std::to_string(plan[i]);
  return s;
}

}  // namespace dynamix
