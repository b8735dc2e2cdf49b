// DYNAMIX — variable-batch distributed sampler.
#include "framework/train/sampler.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "framework/core/error.h"
#include "framework/core/random.h"

namespace dynamix {
namespace {

// Unbiased integer in [0, n) by rejection (Lemire's bound would do too; n is small here). SplitMix64
// is portable: every rank and every platform derives the same permutation.
uint64_t uniform_below(SplitMix64& rng, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = rng.next();
  } while (x >= limit);
  return x % n;
}

}  // namespace

int64_t StepAssignment::total() const { return std::accumulate(counts.begin(), counts.end(), int64_t{0}); }

std::vector<int32_t> proportional_split(int64_t total, const std::vector<int32_t>& weights) {
  const int64_t wsum = std::accumulate(weights.begin(), weights.end(), int64_t{0});
  DYNAMIX_CHECK(wsum > 0, "proportional_split: all weights are zero");
  std::vector<int32_t> out(weights.size());
  std::vector<std::pair<int64_t, size_t>> remainders;  // (remainder numerator, index)
  int64_t assigned = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const int64_t num = total * weights[i];
    out[i] = static_cast<int32_t>(num / wsum);
    assigned += out[i];
    remainders.emplace_back(num % wsum, i);
  }
  // Largest remainders first; ties to the lower rank for determinism.
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; assigned < total; ++k, ++assigned) ++out[remainders[k].second];
  return out;
}

VariableBatchSampler::VariableBatchSampler(int64_t dataset_size, uint64_t seed)
    : size_(dataset_size), seed_(seed) {
  DYNAMIX_CHECK(dataset_size > 0, "sampler: the dataset is empty");
}

void VariableBatchSampler::build_permutation() const {
  if (perm_epoch_ == epoch_) return;
  perm_.resize(static_cast<size_t>(size_));
  std::iota(perm_.begin(), perm_.end(), int64_t{0});
  SplitMix64 rng(seed_ ^ (0xD1B54A32D192ED03ULL * static_cast<uint64_t>(epoch_ + 1)));
  for (int64_t i = size_ - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(uniform_below(rng, static_cast<uint64_t>(i + 1)));
    std::swap(perm_[static_cast<size_t>(i)], perm_[static_cast<size_t>(j)]);
  }
  perm_epoch_ = epoch_;
}

StepAssignment VariableBatchSampler::next(const std::vector<int32_t>& plan) {
  DYNAMIX_CHECK(!plan.empty(), "sampler: empty batch plan");
  int64_t want = 0;
  for (int32_t b : plan) {
    DYNAMIX_CHECK(b >= 0, "sampler: negative batch size " + std::to_string(b) + " in plan");
    want += b;
  }
  DYNAMIX_CHECK(want > 0, "sampler: batch plan sums to zero");
  if (cursor_ >= size_) {
    ++epoch_;
    cursor_ = 0;
  }
  StepAssignment step;
  step.epoch = epoch_;
  step.start = cursor_;
  const int64_t left = size_ - cursor_;
  step.counts = want <= left ? plan : proportional_split(left, plan);
  step.offsets.resize(plan.size());
  int64_t off = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    step.offsets[i] = off;
    off += step.counts[i];
  }
  cursor_ += off;
  return step;
}

std::vector<int64_t> VariableBatchSampler::indices(const StepAssignment& step, int rank) const {
  DYNAMIX_CHECK(rank >= 0 && static_cast<size_t>(rank) < step.counts.size(), "sampler: bad rank");
  DYNAMIX_CHECK(step.epoch == epoch_, "sampler: step belongs to another epoch");
  build_permutation();
  const auto begin = perm_.begin() + step.start + step.offsets[static_cast<size_t>(rank)];
  return std::vector<int64_t>(begin, begin + step.counts[static_cast<size_t>(rank)]);
}

void VariableBatchSampler::set_position(int64_t epoch, int64_t cursor) {
  DYNAMIX_CHECK(epoch >= 0 && cursor >= 0 && cursor <= size_,
                "sampler: position (epoch " + std::to_string(epoch) + ", cursor " + std::to_string(cursor) +
                    ") does not fit a dataset of " + std::to_string(size_) + " samples");
  epoch_ = epoch;
  cursor_ = cursor;
}

}  // namespace dynamix
