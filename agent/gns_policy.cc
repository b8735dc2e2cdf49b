// DYNAMIX — the `gns` baseline policy: per-rank time models (agent/rank_models.h) and goodput.
#include "agent/gns_policy.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "agent/plan_projection.h"
#include "framework/core/error.h"

namespace dynamix {

GnsPolicy::GnsPolicy() : GnsPolicy(Options{}) {}

GnsPolicy::GnsPolicy(Options options)
    : options_(options),
      models_(RankTimeModels::Options{options.history, options.forget, options.change_threshold}),
      noise_(NoiseScaleEstimator::Options{options.ema_decay}) {
  DYNAMIX_CHECK(options_.grid >= 2, "gns policy: grid must be >= 2");
}

BatchPlan GnsPolicy::decide(const ClusterState& state) {
  const size_t n = state.nodes.size();
  models_.observe(state);
  std::vector<int32_t> current(n);
  std::vector<double> grad_norms(n);
  double overhead = 0;
  for (size_t i = 0; i < n; ++i) {
    current[i] = state.nodes[i].batch_size;
    grad_norms[i] = state.nodes[i].grad_sq_norm;
    overhead += (state.nodes[i].comm_s + state.nodes[i].optimizer_s) / double(std::max<size_t>(n, 1));
  }
  if (!std::isfinite(overhead) || overhead < 0) overhead = 0;
  const double b_cur = std::accumulate(current.begin(), current.end(), 0.0);
  if (state.global.grad_sq_norm > 0) noise_.add(current, grad_norms, b_cur, state.global.grad_sq_norm);

  if (!models_.ready()) {
    BatchPlan plan = project_plan(std::vector<double>(current.begin(), current.end()), current, state.bounds);
    plan.note = "gns: waiting for compute measurements of every rank";
    return plan;
  }
  double noise_scale = state.global.noise_scale > 0 ? state.global.noise_scale : noise_.noise_scale();
  if (!std::isfinite(noise_scale)) noise_scale = 0;

  double target =
      state.bounds.fixed_global && state.bounds.global_batch > 0 ? state.bounds.global_batch : b_cur;
  std::string why = state.bounds.fixed_global ? "fixed B" : "B_noise unknown";
  if (!state.bounds.fixed_global && noise_scale > 0) {
    target =
        goodput_batch(models_, state.bounds, b_cur, overhead, noise_scale, options_.min_gain, options_.grid);
    why = "B_noise " + std::to_string(int64_t(std::lround(noise_scale)));
  }

  std::vector<double> lo, hi, b;
  rank_bounds(state.bounds, n, lo, hi);
  const double predicted = models_.split(target, lo, hi, b);
  BatchBounds bounds = state.bounds;
  bounds.fixed_global = true;
  bounds.global_batch = int32_t(std::lround(target));
  BatchPlan plan = project_plan(b, current, bounds);
  plan.actions.resize(n);
  for (size_t i = 0; i < n; ++i) plan.actions[i] = current[i] > 0 ? b[i] / current[i] : 1.0;
  plan.note = "gns: " + why + ", B " + std::to_string(bounds.global_batch) + ", predicted compute " +
              std::to_string(predicted) + " s" + (plan.note.empty() ? "" : "; " + plan.note);
  return plan;
}

}  // namespace dynamix
