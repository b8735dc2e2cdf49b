// DYNAMIX — the `static` baseline policy.
#include "agent/static_policy.h"

#include "agent/plan_projection.h"
#include "framework/core/error.h"

namespace dynamix {

StaticPolicy::StaticPolicy(Options options) : options_(std::move(options)) {
  DYNAMIX_CHECK(!options_.batches.empty(), "static policy: batch plan is empty");
  for (int32_t b : options_.batches) {
    DYNAMIX_CHECK(b >= 1, "static policy: batch sizes must be >= 1, got " + std::to_string(b));
  }
}

BatchPlan StaticPolicy::decide(const ClusterState& state) {
  const size_t n = state.nodes.size();
  const auto& plan = options_.batches;
  DYNAMIX_CHECK(plan.size() == 1 || plan.size() == n, "static policy: plan has " +
                                                          std::to_string(plan.size()) + " entries for " +
                                                          std::to_string(n) + " ranks");
  std::vector<double> desired(n);
  std::vector<int32_t> current(n);
  for (size_t i = 0; i < n; ++i) {
    desired[i] = plan.size() == 1 ? plan[0] : plan[i];
    current[i] = state.nodes[i].batch_size;
  }
  BatchBounds bounds = state.bounds;
  bounds.max_change = 0;
  return project_plan(std::move(desired), current, bounds);
}

}  // namespace dynamix
