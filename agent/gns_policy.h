// DYNAMIX — the `gns` baseline (Pollux-style goodput): per-rank linear compute models and the
// gradient noise scale choose the global batch B, then B is split so ranks finish together.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "agent/batch_policy.h"
#include "agent/noise_scale.h"

namespace dynamix {

class GnsPolicy : public BatchPolicy {
 public:
  struct Options {
    int32_t history = 16;           // (b_i, compute_s) observations kept per rank
    double forget = 0.8;            // weight of an observation per window of age
    double change_threshold = 0.5;  // relative misprediction that restarts a rank's model (slowdowns)
    double min_gain = 0.01;         // change B only for at least this relative goodput gain
    int32_t grid = 48;              // candidate global batches (geometric) before refinement
    double ema_decay = 0.9;         // own noise-scale estimator, used when the state carries none
  };
  // Predicted mean compute time of one rank: t(b) = alpha + beta·b (seconds).
  struct RankModel {
    double alpha = 0, beta = 0;
    bool valid = false;
  };

  GnsPolicy();
  explicit GnsPolicy(Options options);
  std::string name() const override { return "gns"; }
  // Updates the models from the window, then: fixed B (bounds.fixed_global) or unknown B_noise ->
  // re-split the current B; otherwise pick B in the reachable range maximizing
  // B / (max_i t_i(b_i) + comm) · (B_noise + B0) / (B_noise + B) and split it.
  BatchPlan decide(const ClusterState& state) override;

  const std::vector<RankModel>& models() const { return models_; }
  // Continuous split of B over the ranks with equal predicted compute time, within [lo_i, hi_i];
  // returns the predicted compute time max_i t_i(b_i) and fills b.
  double split(double global_batch, const std::vector<double>& lo, const std::vector<double>& hi,
               std::vector<double>& b) const;

 private:
  struct Observation {
    double batch, seconds;
  };
  void observe(const ClusterState& state);
  RankModel fit(const std::deque<Observation>& obs) const;

  Options options_;
  std::vector<std::deque<Observation>> history_;
  std::vector<RankModel> models_;
  NoiseScaleEstimator noise_;
};

}  // namespace dynamix
