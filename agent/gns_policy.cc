// DYNAMIX — the `gns` baseline policy: least-squares throughput models and goodput maximization.
#include "agent/gns_policy.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "agent/plan_projection.h"
#include "framework/core/error.h"

namespace dynamix {

GnsPolicy::GnsPolicy() : GnsPolicy(Options{}) {}

GnsPolicy::GnsPolicy(Options options)
    : options_(options), noise_(NoiseScaleEstimator::Options{options.ema_decay}) {
  DYNAMIX_CHECK(options_.history >= 1, "gns policy: history must be >= 1");
  DYNAMIX_CHECK(options_.forget > 0 && options_.forget <= 1, "gns policy: forget must be in (0, 1]");
  DYNAMIX_CHECK(options_.change_threshold > 0, "gns policy: change_threshold must be > 0");
  DYNAMIX_CHECK(options_.grid >= 2, "gns policy: grid must be >= 2");
}

GnsPolicy::RankModel GnsPolicy::fit(const std::deque<Observation>& obs) const {
  RankModel m;
  if (obs.empty()) return m;
  const int n = int(obs.size());
  Eigen::VectorXd w(n), b(n), t(n);
  double weight = 1;
  for (int k = n - 1; k >= 0; --k, weight *= options_.forget) {  // newest weighs 1
    w[k] = weight;
    b[k] = obs[size_t(k)].batch;
    t[k] = obs[size_t(k)].seconds;
  }
  const bool distinct = b.maxCoeff() - b.minCoeff() >= 0.5;
  if (distinct) {
    // Weighted least squares on [1, b] -> (alpha, beta).
    Eigen::MatrixXd A(n, 2);
    A.col(0) = w.cwiseSqrt();
    A.col(1) = w.cwiseSqrt().cwiseProduct(b);
    const Eigen::Vector2d x = A.colPivHouseholderQr().solve(w.cwiseSqrt().cwiseProduct(t));
    m.alpha = x[0];
    m.beta = x[1];
  }
  if (!distinct || !(m.beta > 0) || !(m.alpha >= 0)) {
    // One batch size seen (or a noisy fit): the proportional prior t = beta·b through the origin.
    m.alpha = 0;
    m.beta = w.dot(t.cwiseProduct(b)) / w.dot(b.cwiseProduct(b));
  }
  m.valid = std::isfinite(m.alpha) && std::isfinite(m.beta) && m.beta > 0;
  return m;
}

void GnsPolicy::observe(const ClusterState& state) {
  const size_t n = state.nodes.size();
  if (history_.size() != n) {
    history_.assign(n, {});
    models_.assign(n, {});
  }
  for (size_t i = 0; i < n; ++i) {
    const NodeRecord& r = state.nodes[i];
    if (!(std::isfinite(r.compute_s) && r.compute_s > 0 && r.batch_size > 0)) continue;
    auto& h = history_[i];
    const RankModel& m = models_[i];
    if (m.valid && h.size() >= 2) {
      const double predicted = m.alpha + m.beta * r.batch_size;
      // A large misprediction means the rank changed (slowdown, interference): start afresh.
      if (std::fabs(r.compute_s - predicted) > options_.change_threshold * predicted) h.clear();
    }
    h.push_back({double(r.batch_size), r.compute_s});
    while (h.size() > size_t(options_.history)) h.pop_front();
    models_[i] = fit(h);
  }
}

double GnsPolicy::split(double global_batch, const std::vector<double>& lo, const std::vector<double>& hi,
                        std::vector<double>& b) const {
  const size_t n = models_.size();
  b.resize(n);
  auto fill = [&](double T) {
    double total = 0;
    for (size_t i = 0; i < n; ++i) {
      b[i] = std::clamp((T - models_[i].alpha) / models_[i].beta, lo[i], hi[i]);
      total += b[i];
    }
    return total;
  };
  double t_lo = HUGE_VAL, t_hi = 0;
  for (size_t i = 0; i < n; ++i) {
    t_lo = std::min(t_lo, models_[i].alpha + models_[i].beta * lo[i]);
    t_hi = std::max(t_hi, models_[i].alpha + models_[i].beta * hi[i]);
  }
  for (int it = 0; it < 80 && t_hi - t_lo > 1e-12 * t_hi; ++it) {
    const double mid = 0.5 * (t_lo + t_hi);
    if (fill(mid) < global_batch)
      t_lo = mid;
    else
      t_hi = mid;
  }
  fill(t_hi);
  double t_max = 0;
  for (size_t i = 0; i < n; ++i) t_max = std::max(t_max, models_[i].alpha + models_[i].beta * b[i]);
  return t_max;
}

BatchPlan GnsPolicy::decide(const ClusterState& state) {
  const size_t n = state.nodes.size();
  observe(state);
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

  bool ready =
      n > 0 && std::all_of(models_.begin(), models_.end(), [](const RankModel& m) { return m.valid; });
  if (!ready) {
    BatchPlan plan = project_plan(std::vector<double>(current.begin(), current.end()), current, state.bounds);
    plan.note = "gns: waiting for compute measurements of every rank";
    return plan;
  }

  std::vector<double> lo(n), hi(n), b;
  for (size_t i = 0; i < n; ++i) {
    lo[i] = std::max(1, state.bounds.min);
    hi[i] = std::max(lo[i], double(rank_max(state.bounds, i)));
  }
  double noise_scale = state.global.noise_scale > 0 ? state.global.noise_scale : noise_.noise_scale();
  if (!std::isfinite(noise_scale)) noise_scale = 0;

  double target =
      state.bounds.fixed_global && state.bounds.global_batch > 0 ? state.bounds.global_batch : b_cur;
  std::string why = state.bounds.fixed_global ? "fixed B" : "B_noise unknown";
  if (!state.bounds.fixed_global && noise_scale > 0) {
    // Goodput up to a constant factor: E(B) ∝ 1 / (B_noise + B), so B0 does not move the argmax.
    auto goodput = [&](double B) { return B / (split(B, lo, hi, b) + overhead) / (noise_scale + B); };
    const double m = state.bounds.max_change;
    double b_min = std::accumulate(lo.begin(), lo.end(), 0.0),
           b_max = std::accumulate(hi.begin(), hi.end(), 0.0);
    if (std::isfinite(m) && m > 0) {  // only what this window may reach
      b_min = std::max(b_min, b_cur * (1 - m));
      b_max = std::min(b_max, b_cur * (1 + m));
    }
    double best = b_cur, best_g = goodput(b_cur);
    const double g_cur = best_g;
    const int grid = options_.grid;
    const double ratio = std::pow(b_max / b_min, 1.0 / (grid - 1));
    for (int k = 0; k < grid; ++k) {
      const double B = b_min * std::pow(ratio, k);
      const double g = goodput(B);
      if (g > best_g) best = B, best_g = g;
    }
    // Golden-section refinement (log scale) around the best grid point.
    double x0 = std::log(std::max(b_min, best / ratio)), x1 = std::log(std::min(b_max, best * ratio));
    const double phi = 0.5 * (std::sqrt(5.0) - 1);
    for (int it = 0; it < 30 && x1 - x0 > 1e-4; ++it) {
      const double a = x1 - phi * (x1 - x0), c = x0 + phi * (x1 - x0);
      if (goodput(std::exp(a)) > goodput(std::exp(c)))
        x1 = c;
      else
        x0 = a;
    }
    const double refined = std::exp(0.5 * (x0 + x1));
    if (goodput(refined) > best_g) best = refined, best_g = goodput(refined);
    if (best_g > g_cur * (1 + options_.min_gain)) target = best;
    why = "B_noise " + std::to_string(int64_t(std::lround(noise_scale)));
  }

  const double predicted = split(target, lo, hi, b);
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
