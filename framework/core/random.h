// DYNAMIX — portable random numbers, the same on every rank and platform: SplitMix64 (Steele, Lea
// and Flood 2014), a seedable 64-bit mix, and Rng, xoshiro256** seeded by it with Box-Muller
// normals (our own generator, not <random>'s distributions, so that a seed gives the same stream
// everywhere: the simulator, pretraining, the emulator's jitter). Header-only and dependency-free,
// so every folder may use it.
#pragma once

#include <cmath>
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

// xoshiro256** (Blackman and Vigna 2018), seeded through SplitMix64.
class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { this->seed(seed); }

  void seed(uint64_t seed) {
    SplitMix64 mix(seed);
    for (auto& s : s_) s = mix.next();
    has_spare_ = false;
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in (0, 1): never 0, so log() is safe.
  double uniform() { return (double(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double r = std::sqrt(-2 * std::log(uniform())), phi = 6.283185307179586 * uniform();
    spare_ = r * std::sin(phi);
    has_spare_ = true;
    return r * std::cos(phi);
  }

  // Positive multiplicative noise with mean 1 and relative std about sigma (log-normal).
  double lognormal_factor(double sigma) {
    return sigma > 0 ? std::exp(sigma * normal() - 0.5 * sigma * sigma) : 1.0;
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4] = {0, 0, 0, 0};
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace dynamix
