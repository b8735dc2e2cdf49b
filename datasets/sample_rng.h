// DYNAMIX — counter-based random numbers: every draw is a pure function of (seed, index, stream).
#pragma once

#include <cstdint>

#include "framework/core/random.h"

namespace dynamix {

// A small generator keyed by (seed, index, stream): the same key gives the same sequence on any
// rank, in any batch, in any order.
class SampleRng {
 public:
  SampleRng(uint64_t seed, uint64_t index, uint64_t stream = 0)
      : state_(mix64(mix64(seed ^ 0xD1B54A32D192ED03ULL) ^ mix64(index) ^ (stream * 0x632BE59BD9B4E019ULL))) {
  }
  uint64_t next() { return mix64(state_ += kGoldenGamma); }
  // Uniform in [0, n); the modulo bias is negligible for the small n used here.
  uint64_t below(uint64_t n) { return next() % n; }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }

 private:
  uint64_t state_;
};

}  // namespace dynamix
