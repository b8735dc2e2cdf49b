// DYNAMIX — synthetic implicit-feedback data for recommender models (NCF): sample i is a
// (user, item) pair and whether the user "clicked", from a hidden low-rank taste model. A few
// users and items are popular (ids drawn with a quadratic skew), most are rare, so a batch
// touches a small fraction of the embedding rows: the sparse gradients the hlc codec is for.
#pragma once

#include "datasets/dataset.h"

namespace dynamix {

class SyntheticInteractions : public Dataset {
 public:
  SyntheticInteractions(int64_t size, int64_t users, int64_t items, uint64_t split_key);
  int64_t size() const override { return size_; }
  std::vector<int64_t> sample_shape() const override { return {2}; }
  int64_t num_classes() const override { return 2; }
  std::vector<int64_t> input_cardinality() const override { return {users_, items_}; }
  // inputs: int64 [N, 2] (user id, item id); targets: int64 [N] in {0, 1}.
  Batch get(const std::vector<int64_t>& indices, uint64_t seed) const override;

  // The hidden taste score of a pair (label = score + noise > 0); exposed for tests.
  double score(int64_t user, int64_t item) const;

 private:
  static constexpr int kRank = 4;
  int64_t size_, users_, items_;
  uint64_t split_key_;
};

}  // namespace dynamix
