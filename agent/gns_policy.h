// DYNAMIX — the `gns` baseline (Pollux-style goodput): per-rank linear compute models and the
// gradient noise scale choose the global batch B, then B is split so ranks finish together.
#pragma once

#include <string>
#include <vector>

#include "agent/batch_policy.h"
#include "agent/noise_scale.h"
#include "agent/rank_models.h"

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
  using RankModel = RankTimeModels::Model;

  GnsPolicy();
  explicit GnsPolicy(Options options);
  std::string name() const override { return "gns"; }
  // Updates the models from the window, then: fixed B (bounds.fixed_global) or unknown B_noise ->
  // re-split the current B; otherwise pick B in the reachable range maximizing
  // B / (max_i t_i(b_i) + comm) · (B_noise + B0) / (B_noise + B) and split it.
  BatchPlan decide(const ClusterState& state) override;

  const std::vector<RankModel>& models() const { return models_.models(); }

 private:
  Options options_;
  RankTimeModels models_;
  NoiseScaleEstimator noise_;
};

}  // namespace dynamix
