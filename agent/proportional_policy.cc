// DYNAMIX — the `proportional` baseline policy.
#include "agent/proportional_policy.h"

#include <cmath>
#include <numeric>

#include "agent/plan_projection.h"
#include "framework/core/error.h"

namespace dynamix {

ProportionalPolicy::ProportionalPolicy() : ProportionalPolicy(Options{}) {}

ProportionalPolicy::ProportionalPolicy(Options options) : options_(options) {
  DYNAMIX_CHECK(options_.deadband >= 0 && std::isfinite(options_.deadband),
                "proportional policy: deadband must be >= 0, got " + std::to_string(options_.deadband));
}

BatchPlan ProportionalPolicy::decide(const ClusterState& state) {
  const size_t n = state.nodes.size();
  std::vector<int32_t> current(n);
  double t_sum = 0;
  size_t t_count = 0;
  for (size_t i = 0; i < n; ++i) {
    current[i] = state.nodes[i].batch_size;
    const double t = state.nodes[i].compute_s;
    if (std::isfinite(t) && t > 0) t_sum += t, ++t_count;
  }
  std::vector<double> desired(current.begin(), current.end());
  std::vector<double> actions(n, 1.0);
  int moved = 0;
  if (t_count > 0) {
    const double t_mean = t_sum / double(t_count);
    for (size_t i = 0; i < n; ++i) {
      const double t = state.nodes[i].compute_s, b = current[i];
      if (!(std::isfinite(t) && t > 0 && b > 0)) continue;  // no measurement: keep b_i
      const double delta = -(b / t) * (t - t_mean);
      if (std::fabs(delta) / b < options_.deadband) continue;
      desired[i] = b + delta;
      actions[i] = desired[i] / b;
      ++moved;
    }
  }
  // The controller only moves load: B stays fixed even when the bounds would let it change.
  BatchBounds bounds = state.bounds;
  if (!bounds.fixed_global || bounds.global_batch <= 0) {
    bounds.fixed_global = true;
    bounds.global_batch = std::accumulate(current.begin(), current.end(), int32_t{0});
  }
  BatchPlan plan = project_plan(std::move(desired), current, bounds);
  plan.actions = std::move(actions);
  plan.note =
      std::to_string(moved) + " rank(s) outside the deadband" + (plan.note.empty() ? "" : "; " + plan.note);
  return plan;
}

}  // namespace dynamix
