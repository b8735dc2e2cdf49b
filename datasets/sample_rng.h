// DYNAMIX — counter-based random numbers: every draw is a pure function of (seed, index, stream).
#pragma once

#include <cstdint>

namespace dynamix {

// SplitMix64 finalizer: a bijective mix with good avalanche, enough for augmentation and masking.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// A small generator keyed by (seed, index, stream): the same key gives the same sequence on any
// rank, in any batch, in any order.
class SampleRng {
 public:
  SampleRng(uint64_t seed, uint64_t index, uint64_t stream = 0)
      : state_(mix64(mix64(seed ^ 0xD1B54A32D192ED03ULL) ^ mix64(index) ^ (stream * 0x632BE59BD9B4E019ULL))) {
  }
  uint64_t next() { return mix64(state_ += 0x9E3779B97F4A7C15ULL); }
  // Uniform in [0, n); the modulo bias is negligible for the small n used here.
  uint64_t below(uint64_t n) { return next() % n; }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }

 private:
  uint64_t state_;
};

}  // namespace dynamix
