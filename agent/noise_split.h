// DYNAMIX — splitting a global batch for the slowest rank's expected time, not the mean time.
//
// A synchronous step lasts as long as its slowest rank. The balanced split equalises the ranks'
// mean compute times; where some ranks' step times scatter more than others' (a shared node, an
// emulated or throttled one), the expected slowest time E[max_i t_i] is lower when the noisier
// ranks carry a little less. The split keeps the balanced split's form, t_i(b_i)·(1 + z·σ_i) equal
// across ranks (σ_i: rank i's relative step-to-step deviation), and picks z ∈ [0, max_z] that
// minimises E[max] with the ranks taken as independent normals. With the same noise everywhere
// every z gives the balanced split, so nothing changes; only noise that differs by more than its
// own estimation error is used.
#pragma once

#include <cstdint>
#include <vector>

#include "agent/rank_models.h"

namespace dynamix {

// E[max_i X_i] for independent X_i ~ N(mean_i, sd_i^2) (sd_i >= 0), by quadrature of
// 1 - prod_i Phi((t - mean_i) / sd_i). Ranks with equal (mean, sd) are evaluated once.
double expected_max_normal(const std::vector<double>& mean, const std::vector<double>& sd);

struct NoiseSplitOptions {
  double min_ratio = 1.5;   // a rank's noise must differ from the median rank's by this factor
  double significance = 3;  // ... and by this many standard errors of its log
  int32_t min_windows = 4;  // ... over this many windows since the rank's model last restarted
  double min_gain = 0.01;   // relative E[max] gain needed to leave the mean-balanced split
  double max_z = 4;         // largest weight of the noise searched
};

// Factors (1 + z·σ_i) for RankTimeModels::split's `scale`, multiplying `base` (the split's scale
// without noise; nullptr: 1). All ones where no rank's noise differs or no z gains min_gain.
// `weighed`, when given, receives the σ_i the factors use (empty where they are all ones): what a
// move between plans is judged by, so that the split and the judgement agree.
std::vector<double> noise_split_scale(const RankTimeModels& models, double global_batch,
                                      const std::vector<double>& lo, const std::vector<double>& hi,
                                      const std::vector<double>* base, const NoiseSplitOptions& options = {},
                                      std::vector<double>* weighed = nullptr);

// The step time a plan is judged by: the slowest rank's mean time, or, where the split weighed the
// ranks' noise (`noise` holds one level per rank), the expected slowest time under that noise.
double judged_step_time(const std::vector<double>& mean, const std::vector<double>& noise);
// The same for plan b under per-rank models: each rank's model at its batch, then judged.
double judged_step_time(const std::vector<RankTimeModels::Model>& models, const std::vector<int32_t>& plan,
                        const std::vector<double>& noise);

}  // namespace dynamix
