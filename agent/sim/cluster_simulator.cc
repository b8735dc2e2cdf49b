// DYNAMIX — the cluster simulator's step loop, events and per-window state.
#include "agent/sim/cluster_simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "agent/plan_projection.h"
#include "framework/core/error.h"
#include "framework/core/stats.h"

namespace dynamix {
namespace {

// Training-loss proxy: ln(10) ≈ 2.3 at the start (10 classes), decaying with progress.
double loss_at(double progress_fraction) { return 0.1 + 2.2 * std::exp(-4 * progress_fraction); }

constexpr double kGiB = 1073741824.0;
constexpr double kDeviceMemory = 16 * kGiB;  // simulated device: 1 GiB fixed + the rest scales with b/b_max

}  // namespace

ClusterSimulator::ClusterSimulator(SimConfig config, BatchBounds bounds, std::vector<int32_t> initial_plan,
                                   int64_t window)
    : config_(std::move(config)), bounds_(std::move(bounds)), window_(window), n_(config_.nodes) {
  DYNAMIX_CHECK(n_ >= 1, "sim.nodes must be >= 1, got " + std::to_string(n_));
  DYNAMIX_CHECK(window_ >= 1, "policy.window must be >= 1, got " + std::to_string(window_));
  if (config_.alpha_s.empty()) {  // a hand-built config without a profile: uniform nodes
    config_.alpha_s.assign(size_t(n_), config_.workload.alpha_s);
    config_.beta_s.assign(size_t(n_), config_.workload.beta_s);
  }
  DYNAMIX_CHECK(config_.alpha_s.size() == size_t(n_) && config_.beta_s.size() == size_t(n_),
                "sim: node models (" + std::to_string(config_.alpha_s.size()) + ") do not match sim.nodes (" +
                    std::to_string(n_) + ")");
  if (config_.noise.empty()) config_.noise.assign(size_t(n_), config_.workload.noise);
  DYNAMIX_CHECK(config_.noise.size() == size_t(n_),
                "sim: per-node noise (" + std::to_string(config_.noise.size()) +
                    ") does not match sim.nodes (" + std::to_string(n_) + ")");
  DYNAMIX_CHECK(bounds_.max.size() <= 1 || bounds_.max.size() == size_t(n_),
                "batch.max has " + std::to_string(bounds_.max.size()) + " entries, expected 1 or " +
                    std::to_string(n_));
  DYNAMIX_CHECK(initial_plan.size() == 1 || initial_plan.size() == size_t(n_),
                "batch.init has " + std::to_string(initial_plan.size()) + " entries, expected 1 or " +
                    std::to_string(n_));
  initial_plan_.assign(size_t(n_), initial_plan[0]);
  if (initial_plan.size() == size_t(n_)) initial_plan_ = initial_plan;
  for (int32_t i = 0; i < n_; ++i) {
    const int32_t b = initial_plan_[size_t(i)], lo = std::max(1, bounds_.min),
                  hi = rank_max(bounds_, size_t(i));
    DYNAMIX_CHECK(b >= lo && b <= hi, "batch.init: rank " + std::to_string(i) + " starts at " +
                                          std::to_string(b) + ", outside [" + std::to_string(lo) + ", " +
                                          std::to_string(hi) + "]");
  }
  if (bounds_.global_batch <= 0) {  // fixed B, or the floor of an adaptive one
    bounds_.global_batch = std::accumulate(initial_plan_.begin(), initial_plan_.end(), int32_t{0});
  }
  const double n = n_, bytes_per_s = config_.workload.bandwidth_gbps * 1e9 / 8;
  ring_bytes_ = n_ > 1 ? 2 * (n - 1) / n * config_.workload.grad_bytes : 0;
  comm_s_ = n_ > 1 ? ring_bytes_ / bytes_per_s + 2 * (n - 1) * config_.workload.latency_us * 1e-6 : 0;
  plan_ = initial_plan_;
  slowdown_.assign(size_t(n_), 1.0);
  compute_.assign(size_t(n_), 0.0);
  sum_compute_.assign(size_t(n_), 0.0);
  sum_compute_sq_.assign(size_t(n_), 0.0);
  sum_wait_.assign(size_t(n_), 0.0);
  last_local_gsq_.assign(size_t(n_), 0.0);
  totals_.nodes = n_;
}

double ClusterSimulator::noise_scale() const {
  const double p = std::min(1.0, totals_.progress / config_.workload.target_progress);
  return config_.workload.b_noise * (1 + (config_.workload.b_noise_growth - 1) * p);
}

bool ClusterSimulator::done() const {
  return totals_.progress >= config_.workload.target_progress ||
         (config_.max_steps > 0 && totals_.steps >= config_.max_steps);
}

ClusterState ClusterSimulator::reset(BatchPolicy* listener) {
  rng_.seed(config_.seed);
  totals_ = SimTotals{};
  totals_.nodes = n_;
  window_index_ = 0;
  next_event_step_ = 0;
  prev_loss_ = 0;
  std::fill(slowdown_.begin(), slowdown_.end(), 1.0);
  plan_ = initial_plan_;
  switched_.assign(size_t(n_), 0);
  simulate(window_, listener);
  return make_state();
}

ClusterState ClusterSimulator::step_window(const BatchPlan& plan, BatchPolicy* listener) {
  const auto& b = plan.batch_sizes;
  DYNAMIX_CHECK(b.size() == size_t(n_), "sim: plan has " + std::to_string(b.size()) + " batch sizes for " +
                                            std::to_string(n_) + " nodes");
  for (int32_t i = 0; i < n_; ++i) {
    const int32_t hi = rank_max(bounds_, size_t(i));
    DYNAMIX_CHECK(b[size_t(i)] >= 1 && b[size_t(i)] <= hi, "sim: plan gives rank " + std::to_string(i) +
                                                               " batch " + std::to_string(b[size_t(i)]) +
                                                               ", outside [1, " + std::to_string(hi) + "]");
  }
  switched_.resize(size_t(n_));
  for (size_t i = 0; i < size_t(n_); ++i) switched_[i] = b[i] != plan_[i];
  plan_ = b;
  ++window_index_;
  simulate(window_ - totals_.steps % window_, listener);  // to the next regular decision
  return make_state();
}

void ClusterSimulator::update_slowdowns() {
  const int64_t t = totals_.steps;
  std::fill(slowdown_.begin(), slowdown_.end(), 1.0);
  int64_t next = std::numeric_limits<int64_t>::max();
  for (const SimEvent& e : config_.events) {  // permanent events replace, in step order
    if (e.at_step > t) next = std::min(next, e.at_step);
    if (e.duration_steps == 0 && !e.drift() && e.at_step <= t) {
      for (int32_t r : e.ranks) slowdown_[size_t(r)] = e.slowdown;
    }
  }
  for (const SimEvent& e : config_.events) {  // transient events and drifts multiply while active
    if (e.duration_steps == 0 && !e.drift()) continue;
    const int64_t end =
        e.duration_steps > 0 ? e.at_step + e.duration_steps : std::numeric_limits<int64_t>::max();
    if (end > t) next = std::min(next, end);
    // A drift changes every step; it is sampled kDriftSamples times a cycle (the ideal is
    // recomputed at each sample, and 1024 ranks make that the costly part).
    if (e.drift() && e.at_step <= t && t < end) {
      next = std::min(next, t + std::max<int64_t>(1, e.period_steps / kDriftSamples));
    }
    const double f = e.factor_at(t);
    if (f != 1.0) {
      for (int32_t r : e.ranks) slowdown_[size_t(r)] *= f;
    }
  }
  next_event_step_ = next;
  ideal_batch_ = -1;  // the balanced throughput changed with the slowdowns
}

void ClusterSimulator::simulate(int64_t steps, BatchPolicy* listener) {
  std::fill(sum_compute_.begin(), sum_compute_.end(), 0.0);
  std::fill(sum_compute_sq_.begin(), sum_compute_sq_.end(), 0.0);
  std::fill(sum_wait_.begin(), sum_wait_.end(), 0.0);
  step_compute_.resize(size_t(steps) * size_t(n_));
  win_steps_ = 0;
  win_time_ = win_loss_ = win_gnorm_ = win_gnorm_sq_ = 0;
  const SimWorkload& w = config_.workload;
  const double B = std::accumulate(plan_.begin(), plan_.end(), 0.0);
  const double* alpha = config_.alpha_s.data();
  const double* beta = config_.beta_s.data();
  const int32_t* b = plan_.data();
  const double* noise = config_.noise.data();
  double* c = compute_.data();
  // Noise model: tr(Sigma) stays at b_noise while |G|^2 shrinks as 1/growth, so
  // B_noise = tr(Sigma)/|G|^2 grows from b_noise to b_noise·b_noise_growth (McCandlish et al.).
  const double trace_sigma = w.b_noise;
  double grad_sq = 1;
  int64_t end = steps;
  for (int64_t s = 0; s < end && !done(); ++s) {
    if (totals_.steps >= next_event_step_) update_slowdowns();
    if (B != ideal_batch_) balanced_compute(B, ideal_compute_), ideal_batch_ = B;
    double max_c = 0, ideal_c = 0;
    for (int32_t i = 0; i < n_; ++i) {
      const double draw = rng_.lognormal_factor(noise[i]);
      c[i] = (alpha[i] + beta[i] * b[i]) * slowdown_[size_t(i)] * draw;
      if (s == 0 && switched_[size_t(i)]) c[i] *= 1 + w.switch_cost;  // the first step at a new batch
      max_c = std::max(max_c, c[i]);
      ideal_c = std::max(ideal_c, ideal_compute_[size_t(i)] * draw);  // the balanced plan, same noise
    }
    double wait = 0;
    std::copy(c, c + n_, step_compute_.begin() + s * n_);
    for (int32_t i = 0; i < n_; ++i) {
      sum_compute_[size_t(i)] += c[i];
      sum_compute_sq_[size_t(i)] += c[i] * c[i];
      sum_wait_[size_t(i)] += max_c - c[i];
      wait += max_c - c[i];
    }
    const double step_time = max_c + comm_s_;
    const double fraction = std::min(1.0, totals_.progress / w.target_progress);
    const double noise_scale = w.b_noise * (1 + (w.b_noise_growth - 1) * fraction);
    grad_sq = noise_scale > 0 ? trace_sigma / noise_scale : 1;
    const double global_gsq = (grad_sq + trace_sigma / B) * rng_.lognormal_factor(w.grad_noise);
    win_gnorm_ += std::sqrt(global_gsq);
    win_gnorm_sq_ += global_gsq;
    last_global_gsq_ = global_gsq;
    win_loss_ += loss_at(fraction);
    win_time_ += step_time;
    ++win_steps_;

    ++totals_.steps;
    totals_.sim_time_s += step_time;
    totals_.samples += B;
    totals_.ideal_time_s += ideal_c + comm_s_;
    totals_.wait_s += wait;
    totals_.progress += 1 / (1 + noise_scale / B);
    if (totals_.progress >= w.target_progress && totals_.time_to_target_s < 0) {
      totals_.time_to_target_s = totals_.sim_time_s;
    }
    if (listener && listener->wants_decision(compute_)) end = std::min(end, s + 2);
  }
  if (win_steps_ > 0) {  // local gradients of the window's last step
    for (int32_t i = 0; i < n_; ++i) {
      last_local_gsq_[size_t(i)] = (grad_sq + trace_sigma / b[i]) * rng_.lognormal_factor(w.grad_noise);
    }
  }
}

double ClusterSimulator::recent_compute(int32_t i) const {
  const int64_t k = recent_steps(win_steps_);
  double sum = 0;
  for (int64_t s = win_steps_ - k; s < win_steps_; ++s) sum += step_compute_[size_t(s * n_ + i)];
  return sum / double(k);
}

ClusterState ClusterSimulator::make_state() {
  ClusterState st;
  st.window = window_index_;
  st.bounds = bounds_;
  st.nodes.resize(size_t(n_));
  const double ws = double(std::max<int64_t>(win_steps_, 1));
  const double mean_step = win_time_ / ws;
  double c_min = HUGE_VAL, c_max = 0;
  for (int32_t i = 0; i < n_; ++i) {
    NodeRecord& r = st.nodes[size_t(i)];
    r.rank = i;
    r.batch_size = plan_[size_t(i)];
    r.batch_max = rank_max(bounds_, size_t(i));
    r.steps = int32_t(win_steps_);
    r.compute_s = sum_compute_[size_t(i)] / ws;
    r.compute_rel_se =
        relative_standard_error(sum_compute_[size_t(i)], sum_compute_sq_[size_t(i)], double(win_steps_));
    // A window with no steps (the run had ended) has no recent part: the window's mean.
    r.compute_recent_s = win_steps_ > 0 ? recent_compute(i) : r.compute_s;
    r.comm_s = comm_s_;
    r.wait_s = sum_wait_[size_t(i)] / ws;
    r.samples_per_s = r.compute_s > 0 ? r.batch_size / r.compute_s : 0;
    r.grad_sq_norm = last_local_gsq_[size_t(i)];
    // Simulated stand-ins for the monitor's readings: busy fraction, memory by batch, ring traffic.
    r.gpu_util = r.cpu_util_process = mean_step > 0 ? r.compute_s / mean_step : 0;
    r.gpu_mem_total_bytes = kDeviceMemory;
    r.gpu_mem_used_bytes = kGiB + (kDeviceMemory - kGiB) * std::min(1.0, double(r.batch_size) / r.batch_max);
    r.net_tx_bytes_per_s = r.net_rx_bytes_per_s = mean_step > 0 ? ring_bytes_ / mean_step : 0;
    if (win_steps_ > 0) c_min = std::min(c_min, r.compute_s), c_max = std::max(c_max, r.compute_s);
  }
  GlobalStats& g = st.global;
  g.step = totals_.steps;
  g.progress = std::min(1.0, totals_.progress / config_.workload.target_progress);
  g.global_batch = std::accumulate(plan_.begin(), plan_.end(), int32_t{0});
  g.loss = win_steps_ > 0 ? win_loss_ / ws : loss_at(g.progress);
  g.loss_trend = prev_loss_ > 0 ? (g.loss - prev_loss_) / prev_loss_ : 0;
  prev_loss_ = g.loss;
  g.grad_sq_norm = last_global_gsq_;
  const double mean_norm = win_gnorm_ / ws;
  g.grad_norm_variance = std::max(0.0, win_gnorm_sq_ / ws - mean_norm * mean_norm);
  g.noise_scale = noise_scale();
  g.step_time_spread = c_min > 0 && c_max > 0 ? c_max / c_min : 1;
  g.ideal_throughput = balanced_throughput(g.global_batch);
  return st;
}

void ClusterSimulator::balanced_compute(double global_batch, std::vector<double>& compute) const {
  // Equal finish time T: b_i = clamp((T - a_i)/c_i, lo, hi_i) with a_i, c_i the slowed-down alpha
  // and beta. The sum is increasing in T: bisection.
  const double lo = std::max(1, bounds_.min);
  auto a = [&](int32_t i) { return config_.alpha_s[size_t(i)] * slowdown_[size_t(i)]; };
  auto c = [&](int32_t i) { return config_.beta_s[size_t(i)] * slowdown_[size_t(i)]; };
  auto share = [&](int32_t i, double T) {
    return std::clamp((T - a(i)) / c(i), lo, std::max(lo, double(rank_max(bounds_, size_t(i)))));
  };
  double t_lo = HUGE_VAL, t_hi = 0;
  for (int32_t i = 0; i < n_; ++i) {
    t_lo = std::min(t_lo, a(i));
    t_hi = std::max(t_hi, a(i) + c(i) * global_batch);
  }
  for (int it = 0; it < 200 && t_hi - t_lo > 1e-15 * t_hi; ++it) {
    const double T = 0.5 * (t_lo + t_hi);
    double total = 0;
    for (int32_t i = 0; i < n_; ++i) total += share(i, T);
    (total < global_batch ? t_lo : t_hi) = T;
  }
  compute.resize(size_t(n_));
  for (int32_t i = 0; i < n_; ++i) compute[size_t(i)] = a(i) + c(i) * share(i, t_hi);
}

double ClusterSimulator::balanced_throughput(double global_batch) const {
  std::vector<double> compute;
  balanced_compute(global_batch, compute);
  return global_batch / (*std::max_element(compute.begin(), compute.end()) + comm_s_);
}

}  // namespace dynamix
