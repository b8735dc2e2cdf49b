// DYNAMIX — the `proportional` baseline (Tyagi & Sharma; OmniLearn): batch inversely to compute time.
#pragma once

#include <string>

#include "agent/batch_policy.h"

namespace dynamix {

class ProportionalPolicy : public BatchPolicy {
 public:
  struct Options {
    double deadband = 0.2;  // apply Δb_i only when |Δb_i| / b_i >= deadband (damps noise)
  };

  ProportionalPolicy();
  explicit ProportionalPolicy(Options options);
  std::string name() const override { return "proportional"; }
  // With t_i the window's mean compute time and t̄ their mean: Δb_i = -(b_i/t_i)(t_i - t̄), applied
  // past the deadband, then projected onto the bounds keeping B (bounds.global_batch, or the
  // current sum when B may vary) by spreading the remainder. actions[i] is the multiplier asked
  // for rank i (1 inside the deadband).
  BatchPlan decide(const ClusterState& state) override;

 private:
  Options options_;
};

}  // namespace dynamix
