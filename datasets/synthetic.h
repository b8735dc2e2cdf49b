// DYNAMIX — synthetic data: learnable class-pattern images and Markov token sequences (for MLM).
#pragma once

#include "datasets/dataset.h"
#include "datasets/mlm_masking.h"

namespace dynamix {

// Sample i has label i % classes and input pattern[label] + noise, the noise uniform with mean 0
// and variance 1, a pure function of (split_key, i). A class pattern is a 4x4 grid of normal
// values per channel (blocks over H x W) plus half a uniform per-pixel pattern, fixed for all
// splits, so MLPs and pooling CNNs alike can learn the classes.
class SyntheticImages : public Dataset {
 public:
  SyntheticImages(int64_t size, std::vector<int64_t> shape, int64_t classes, uint64_t split_key);
  int64_t size() const override { return size_; }
  std::vector<int64_t> sample_shape() const override { return shape_; }
  int64_t num_classes() const override { return classes_; }
  Batch get(const std::vector<int64_t>& indices, uint64_t seed) const override;

 private:
  static constexpr int64_t kGrid = 4;
  void fill(int64_t index, int64_t label, float* out) const;

  int64_t size_, classes_, numel_;
  std::vector<int64_t> shape_;
  uint64_t split_key_;
  int64_t channels_ = 1, h_ = 1, w_ = 1, grid_h_ = 1, grid_w_ = 1;
  std::vector<float> coarse_;  // [classes, channels, grid_h, grid_w]
  std::vector<int64_t> col_;   // grid column of each image column
};

// Sequences [CLS] t_1 .. t_{L-2} [SEP] over a vocab of `vocab_size` ids (ids 0-4 are special):
// t_{k+1} follows a fixed successor of t_k with probability 0.9, else is random, so masked tokens
// are predictable from their neighbours. task() = "mlm", BERT masking as mask_tokens.
class SyntheticTokens : public Dataset {
 public:
  SyntheticTokens(int64_t size, int64_t seq_len, int64_t vocab_size, uint64_t split_key);
  int64_t size() const override { return size_; }
  std::vector<int64_t> sample_shape() const override { return {seq_len_}; }
  int64_t num_classes() const override { return vocab_size_; }
  std::string task() const override { return "mlm"; }
  Batch get(const std::vector<int64_t>& indices, uint64_t seed) const override;

 private:
  int64_t size_, seq_len_, vocab_size_;
  uint64_t split_key_;
  SpecialTokens special_;
};

}  // namespace dynamix
