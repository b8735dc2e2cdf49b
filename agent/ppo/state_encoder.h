// DYNAMIX — ClusterState -> per-rank and global feature vectors, and their running normaliser.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/cluster_state.h"

namespace dynamix {

constexpr int64_t kNodeFeatures = 10;   // per rank, see encode_state
constexpr int64_t kGlobalFeatures = 6;  // per window

// Raw features, each a bounded transform of the measurement (ratios clamped, magnitudes log1p)
// so one extreme record cannot wreck the running statistics.
struct EncodedState {
  int64_t ranks = 0;
  std::vector<float> node;    // ranks x kNodeFeatures, row-major
  std::vector<float> global;  // kGlobalFeatures
  bool finite = true;         // false when a field the encoder reads is NaN/Inf
  std::string problem;        // which field, when !finite
};

// Per rank: b_i/b_max_i, compute_i/mean compute, wait fraction, samples/s / mean samples/s,
// CPU util, GPU util, memory headroom, log1p(net bytes/s), log1p(retransmits/s), log1p(srtt us).
// Global: B/B_max, B_noise/B, loss trend, gradient-norm variance (relative), step-time spread
// (log), progress.
EncodedState encode_state(const ClusterState& state);

// Running mean/variance per feature (Chan et al.'s parallel form of Welford's update), as in
// CleanRL's RunningMeanStd: starts at mean 0, var 1, count 1e-4.
class RunningNorm {
 public:
  explicit RunningNorm(int64_t dims = 0);
  // rows x dims values, row-major.
  void update(const std::vector<float>& values, int64_t rows);
  // (x - mean) / sqrt(var + 1e-8), clipped to [-clip, clip].
  std::vector<float> normalize(const std::vector<float>& values, int64_t rows, double clip) const;

  int64_t dims() const { return static_cast<int64_t>(mean_.size()); }
  const std::vector<double>& mean() const { return mean_; }
  const std::vector<double>& var() const { return var_; }
  double count() const { return count_; }
  void set(std::vector<double> mean, std::vector<double> var, double count);

 private:
  std::vector<double> mean_, var_;
  double count_ = 1e-4;
};

}  // namespace dynamix
