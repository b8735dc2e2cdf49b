// DYNAMIX — variable-batch distributed sampler. One seeded permutation per epoch, identical on
// every rank; step s takes the next B = sum(b_i) indices and rank i the slice at offset
// sum_{j<i} b_j. At an epoch's tail the plan is scaled down (largest remainder) to what is
// left, so every sample is used exactly once per epoch whatever the plan does.
#pragma once

#include <cstdint>
#include <vector>

namespace dynamix {

struct StepAssignment {
  int64_t epoch = 0;
  int64_t start = 0;             // position of the step's first index in the permutation
  std::vector<int32_t> counts;   // samples per rank this step (may be below plan at a tail)
  std::vector<int64_t> offsets;  // start of each rank's slice, relative to `start`
  int64_t total() const;
};

class VariableBatchSampler {
 public:
  VariableBatchSampler(int64_t dataset_size, uint64_t seed);

  // Assigns the next step's samples for `plan` (one entry per rank, each >= 0, sum > 0) and
  // advances. A step never crosses an epoch boundary.
  StepAssignment next(const std::vector<int32_t>& plan);
  // Dataset indices of `rank`'s slice of `step`.
  std::vector<int64_t> indices(const StepAssignment& step, int rank) const;

  int64_t dataset_size() const { return size_; }
  int64_t epoch() const { return epoch_; }
  int64_t cursor() const { return cursor_; }  // next unread position in this epoch's permutation
  double fractional_epoch() const { return epoch_ + static_cast<double>(cursor_) / size_; }
  // Restores a position saved in a checkpoint.
  void set_position(int64_t epoch, int64_t cursor);

 private:
  void build_permutation() const;  // lazily, once per epoch

  int64_t size_;
  uint64_t seed_;
  int64_t epoch_ = 0;
  int64_t cursor_ = 0;
  mutable int64_t perm_epoch_ = -1;
  mutable std::vector<int64_t> perm_;
};

// Splits `total` into parts proportional to `weights` (>= 0, some > 0) by largest remainder.
std::vector<int32_t> proportional_split(int64_t total, const std::vector<int32_t>& weights);

}  // namespace dynamix
