// DYNAMIX — per-window reward: goodput vs reference, instability, churn, generalization.
#include "agent/ppo/reward.h"

#include <algorithm>
#include <cmath>

namespace dynamix {
namespace {

double clip(double v, double lo, double hi) { return std::isfinite(v) ? std::min(hi, std::max(lo, v)) : 0.0; }

double global_batch(const ClusterState& s) {
  double b = 0;
  for (const auto& n : s.nodes) b += std::max(0, n.batch_size);
  return b;
}

}  // namespace

double window_throughput(const ClusterState& s) {
  double step = 0;
  for (const auto& n : s.nodes)
    step = std::max(step, n.data_s + n.compute_s + n.wait_s + n.comm_s + n.optimizer_s);
  const double b = global_batch(s);
  if (!(step > 0) || !std::isfinite(step) || b <= 0) return 0;
  return b / step;
}

void RewardTracker::observe_first(const ClusterState& s) {
  has_first_ = true;
  prev_gvar_ = s.global.grad_norm_variance;
  prev_accuracy_ = s.global.last_test_accuracy;
}

RewardTerms RewardTracker::reward(const ClusterState& s, const std::vector<int32_t>& prev,
                                  double ideal_estimate) {
  if (!has_first_) {
    observe_first(s);
    return {};
  }
  RewardTerms t;
  t.throughput = window_throughput(s);
  t.ideal = s.global.ideal_throughput > 0 ? s.global.ideal_throughput : ideal_estimate;
  t.efficiency = t.ideal > 0 ? clip(t.throughput / t.ideal, 0, 2) : 0;

  const auto& g = s.global;
  double spike = std::max(0.0, clip(g.loss_trend, -10, 10) - w_.spike_threshold);
  double jump = 0;
  if (prev_gvar_ > 0 && g.grad_norm_variance > 0)
    jump = std::max(0.0, std::log(g.grad_norm_variance / prev_gvar_));
  t.instability = clip(spike + jump, 0, 10);

  double churn = 0;
  size_t n = std::min(prev.size(), s.nodes.size());
  for (size_t i = 0; i < n; ++i) {
    if (prev[i] > 0) churn += std::abs(s.nodes[i].batch_size - prev[i]) / static_cast<double>(prev[i]);
  }
  t.churn = n ? clip(churn / n, 0, 10) : 0;

  if (prev_accuracy_ >= 0 && g.last_test_accuracy >= 0) {
    t.generalization = clip(g.last_test_accuracy - prev_accuracy_, -1, 1);
  } else {
    t.generalization = clip(-g.loss_trend, -1, 1);
  }
  for (const auto& node : s.nodes) t.oom = std::max(t.oom, node.oom_events > 0 ? 1.0 : 0.0);
  t.total = w_.efficiency * t.efficiency - w_.instability * t.instability - w_.churn * t.churn +
            w_.generalization * t.generalization - w_.oom * t.oom;
  if (std::isfinite(g.grad_norm_variance)) prev_gvar_ = g.grad_norm_variance;
  if (std::isfinite(g.last_test_accuracy)) prev_accuracy_ = g.last_test_accuracy;
  return t;
}

}  // namespace dynamix
