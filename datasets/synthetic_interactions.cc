// DYNAMIX — synthetic user-item interactions.
#include "datasets/synthetic_interactions.h"

#include <cmath>

#include "datasets/sample_rng.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

constexpr uint64_t kUserKey = 0x5553455253ULL, kItemKey = 0x4954454D53ULL, kNoiseKey = 0x4E4F495345ULL;

// Id in [0, n) with density falling off toward large ids: floor(n * u^2).
int64_t skewed_id(SampleRng& rng, int64_t n) {
  const double u = rng.uniform();
  return std::min<int64_t>(n - 1, static_cast<int64_t>(static_cast<double>(n) * u * u));
}

// Latent factor k of an entity: uniform in [-1, 1), a pure function of (key, id, k).
double factor(uint64_t key, int64_t id, int k) {
  return SampleRng(key, static_cast<uint64_t>(id), static_cast<uint64_t>(k)).uniform() * 2.0 - 1.0;
}

}  // namespace

SyntheticInteractions::SyntheticInteractions(int64_t size, int64_t users, int64_t items, uint64_t split_key)
    : size_(size), users_(users), items_(items), split_key_(split_key) {
  DYNAMIX_CHECK(size >= 1, "synthetic_interactions: size must be >= 1");
  DYNAMIX_CHECK(users >= 1 && items >= 1, "synthetic_interactions: users and items must be >= 1, got " +
                                              std::to_string(users) + " and " + std::to_string(items));
}

double SyntheticInteractions::score(int64_t user, int64_t item) const {
  double s = 0;
  for (int k = 0; k < kRank; ++k) s += factor(kUserKey, user, k) * factor(kItemKey, item, k);
  return s;
}

Batch SyntheticInteractions::get(const std::vector<int64_t>& indices,
                                 uint64_t /*seed: no augmentation*/) const {
  const auto n = static_cast<int64_t>(indices.size());
  auto inputs = torch::empty({n, 2}, torch::kInt64);
  auto targets = torch::empty({n}, torch::kInt64);
  auto* in = inputs.data_ptr<int64_t>();
  auto* tg = targets.data_ptr<int64_t>();
  for (int64_t j = 0; j < n; ++j) {
    const int64_t i = indices[static_cast<size_t>(j)];
    DYNAMIX_CHECK(i >= 0 && i < size_, "synthetic_interactions: index " + std::to_string(i) +
                                           " out of range [0, " + std::to_string(size_) + ")");
    SampleRng rng(split_key_, static_cast<uint64_t>(i));
    const int64_t user = skewed_id(rng, users_), item = skewed_id(rng, items_);
    const double noise = (SampleRng(split_key_ ^ kNoiseKey, static_cast<uint64_t>(i)).uniform() - 0.5) * 0.4;
    in[2 * j] = user;
    in[2 * j + 1] = item;
    tg[j] = score(user, item) + noise > 0 ? 1 : 0;
  }
  return {inputs, targets};
}

}  // namespace dynamix
