// DYNAMIX — synthetic images and tokens; our own counter-based noise keeps samples identical
// across LibTorch versions and ranks.
#include "datasets/synthetic.h"

#include <cmath>

#include "datasets/idx_dataset.h"
#include "datasets/sample_rng.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

constexpr uint64_t kPatternSeed = 0x5EED0F5A7ECULL;  // class patterns: the same for every split
constexpr double kTwoPi = 6.283185307179586;

// Fills out[0..n) with standard normals (Box-Muller) drawn from rng.
void fill_normal(float* out, int64_t n, SampleRng& rng) {
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = 1.0 - rng.uniform();  // (0, 1]: log stays finite
    const double u2 = rng.uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    out[i] = static_cast<float>(r * std::cos(kTwoPi * u2));
    if (i + 1 < n) out[i + 1] = static_cast<float>(r * std::sin(kTwoPi * u2));
  }
}

// Uniform value of mean 0 and variance 1 from 32 random bits: width sqrt(12).
inline float unit_uniform(uint32_t bits) {
  constexpr float kScale = 3.4641016f / 4294967296.0f;
  return static_cast<float>(bits) * kScale - 1.7320508f;
}

}  // namespace

SyntheticImages::SyntheticImages(int64_t size, std::vector<int64_t> shape, int64_t classes,
                                 uint64_t split_key)
    : size_(size), classes_(classes), numel_(1), shape_(std::move(shape)), split_key_(split_key) {
  if (size <= 0) throw Error("dataset: synthetic split size must be positive, got " + std::to_string(size));
  if (classes < 2) throw Error("dataset.classes must be at least 2, got " + std::to_string(classes));
  if (shape_.empty()) throw Error("dataset.shape must have at least one dimension");
  for (int64_t d : shape_) {
    if (d <= 0) throw Error("dataset.shape: every dimension must be positive, got " + std::to_string(d));
    numel_ *= d;
  }
  // Rank-1 shapes are one row of W values; otherwise the last two dimensions are H x W.
  w_ = shape_.back();
  h_ = shape_.size() >= 2 ? shape_[shape_.size() - 2] : 1;
  channels_ = numel_ / (h_ * w_);
  grid_h_ = std::min<int64_t>(kGrid, h_);
  grid_w_ = std::min<int64_t>(kGrid, w_);
  for (int64_t x = 0; x < w_; ++x) col_.push_back(x * grid_w_ / w_);
  coarse_.resize(static_cast<size_t>(classes * channels_ * grid_h_ * grid_w_));
  SampleRng rng(kPatternSeed, 0, /*stream=*/3);
  fill_normal(coarse_.data(), static_cast<int64_t>(coarse_.size()), rng);
}

void SyntheticImages::fill(int64_t index, int64_t label, float* out) const {
  // Class pattern (coarse block value + half a per-class fine pattern) plus per-sample noise; the
  // patterns are recomputed per sample so memory stays small for large images and many classes.
  SampleRng fine(kPatternSeed, static_cast<uint64_t>(label), /*stream=*/6);
  SampleRng noise(split_key_, static_cast<uint64_t>(index), /*stream=*/4);
  const float* grid = coarse_.data() + label * channels_ * grid_h_ * grid_w_;
  for (int64_t c = 0; c < channels_; ++c) {
    for (int64_t y = 0; y < h_; ++y) {
      const float* grow = grid + (c * grid_h_ + y * grid_h_ / h_) * grid_w_;
      float* row = out + (c * h_ + y) * w_;
      // One 64-bit draw per stream serves two pixels.
      for (int64_t x = 0; x < w_; x += 2) {
        const uint64_t f = fine.next(), n = noise.next();
        row[x] = grow[col_[x]] + 0.5f * unit_uniform(static_cast<uint32_t>(f)) +
                 unit_uniform(static_cast<uint32_t>(n));
        if (x + 1 < w_) {
          row[x + 1] = grow[col_[x + 1]] + 0.5f * unit_uniform(static_cast<uint32_t>(f >> 32)) +
                       unit_uniform(static_cast<uint32_t>(n >> 32));
        }
      }
    }
  }
}

Batch SyntheticImages::get(const std::vector<int64_t>& indices, uint64_t /*seed*/) const {
  torch::Tensor idx = index_tensor(indices, size_);
  torch::Tensor labels = idx.remainder(classes_);
  std::vector<int64_t> shape{static_cast<int64_t>(indices.size())};
  shape.insert(shape.end(), shape_.begin(), shape_.end());
  torch::Tensor x = torch::empty(shape, torch::kFloat32);
  float* xp = x.data_ptr<float>();
  const int64_t* lp = labels.data_ptr<int64_t>();
  // One thread: the loader splits large batches over its workers (datasets/prefetcher.h).
  // (at::parallel_for ran serially here: its OpenMP loop lives in a header, and this code is not
  // compiled with -fopenmp.)
  for (size_t k = 0; k < indices.size(); ++k) fill(indices[k], lp[k], xp + static_cast<int64_t>(k) * numel_);
  return {x, labels};
}

SyntheticTokens::SyntheticTokens(int64_t size, int64_t seq_len, int64_t vocab_size, uint64_t split_key)
    : size_(size), seq_len_(seq_len), vocab_size_(vocab_size), split_key_(split_key) {
  if (size <= 0) throw Error("dataset: synthetic split size must be positive, got " + std::to_string(size));
  if (seq_len < 3) throw Error("dataset.seq_len must be at least 3, got " + std::to_string(seq_len));
  if (vocab_size < 7) {
    throw Error("dataset.classes (the vocabulary size of synthetic_tokens) must be at least 7, got " +
                std::to_string(vocab_size));
  }
}

Batch SyntheticTokens::get(const std::vector<int64_t>& indices, uint64_t seed) const {
  index_tensor(indices, size_);  // range check
  const int64_t n = static_cast<int64_t>(indices.size());
  const uint64_t first = 5, content = static_cast<uint64_t>(vocab_size_) - first;
  torch::Tensor rows = torch::empty({n, seq_len_}, torch::kInt64);
  int64_t* r = rows.data_ptr<int64_t>();
  for (int64_t k = 0; k < n; ++k) {
    SampleRng rng(split_key_, static_cast<uint64_t>(indices[k]), /*stream=*/5);
    int64_t* row = r + k * seq_len_;
    row[0] = special_.cls;
    uint64_t t = rng.below(content);
    for (int64_t p = 1; p < seq_len_ - 1; ++p) {
      row[p] = static_cast<int64_t>(first + t);
      t = rng.uniform() < 0.9 ? (t * 31 + 7) % content : rng.below(content);
    }
    row[seq_len_ - 1] = special_.sep;
  }
  return mask_tokens(rows, indices, seed, special_, vocab_size_);
}

}  // namespace dynamix
