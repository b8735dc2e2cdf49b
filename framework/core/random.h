// DYNAMIX — the one SplitMix64 (Steele, Lea and Flood 2014): a portable, seedable 64-bit mix, the
// same on every rank and platform. Header-only and dependency-free, so every folder may use it.
#pragma once

#include <cstdint>

namespace dynamix {

inline constexpr uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ULL;

// SplitMix64's output function applied to x + gamma: a bijective mix with good avalanche.
inline uint64_t mix64(uint64_t x) {
  x += kGoldenGamma;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// The SplitMix64 generator: state advances by gamma, each output is mix64 of the previous state.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    const uint64_t out = mix64(state_);
    state_ += kGoldenGamma;
    return out;
  }

 private:
  uint64_t state_;
};

}  // namespace dynamix
