// DYNAMIX — per-rank time models: weighted least squares with forgetting, change detection, split.
#include "agent/rank_models.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "agent/plan_projection.h"
#include "framework/core/error.h"
#include "framework/core/stats.h"

namespace dynamix {
namespace {
constexpr int kMinAffineObservations = 3;     // two parameters and one degree of freedom for the noise
constexpr double kAlphaSignificance = 2;      // |alpha| / standard error to keep the fixed cost
constexpr double kBetaSignificance = 2;       // and beta / its standard error
constexpr double kMedianVarianceCost = 1.57;  // variance of a median over that of a mean (pi/2)
constexpr double kReturnZ = 3;                // step-noise standard errors a spell's return must clear
constexpr double kShiftZ = 3;                 // standard errors a level shift must clear
constexpr double kShiftFloor = 0.18;          // and this log-ratio beyond them (1.2x: wander)
// Windows of history before a level shift can restart a model: a younger one's forecast carries
// its own fitting error (a restart is fitted from a window's last quarter).
constexpr size_t kShiftHistory = 4;

// The window measured its last quarter (compute_recent_s), for a change inside it.
bool has_recent(const NodeRecord& r) { return r.compute_recent_s > 0 && std::isfinite(r.compute_recent_s); }

uint8_t spell_flags(const std::vector<uint8_t>* spells, size_t i) {
  return spells && i < spells->size() ? (*spells)[i] : 0;
}

// A time `measured` at batch b against a proportional model's forecast `predicted` fitted at one
// batch b0 alone: with any fixed cost >= 0 and the rank's speed unchanged, measured / predicted
// lies between 1 and b0 / b (all per-sample cost, all fixed cost). More than 1 + `share` times
// off that range, either way, is a change of speed, not the model's extrapolation.
bool beyond_extrapolation(double measured, double predicted, double b0, double b, double share) {
  const double ratio = b0 / b, lo = std::min(1.0, ratio), hi = std::max(1.0, ratio);
  return measured * (1 + share) < lo * predicted || measured > hi * predicted * (1 + share);
}
}  // namespace

RankTimeModels::RankTimeModels() : RankTimeModels(Options{}) {}

RankTimeModels::RankTimeModels(Options options) : options_(options) {
  DYNAMIX_CHECK(options_.history >= 1, "rank models: history must be >= 1");
  DYNAMIX_CHECK(options_.forget > 0 && options_.forget <= 1, "rank models: forget must be in (0, 1]");
  DYNAMIX_CHECK(options_.change_threshold > 0, "rank models: change_threshold must be > 0");
  for (int32_t age = 0; age < options_.history; ++age) age_weight_.push_back(std::pow(options_.forget, age));
  // Effective windows of a fit over k age-weighted windows, (sum w)^2 / sum w^2; 1 for none.
  effective_windows_.assign(size_t(options_.history) + 1, 1.0);
  double sum = 0, sum_sq = 0;
  for (int32_t k = 1; k <= options_.history; ++k) {
    sum += age_weight_[size_t(k - 1)];
    sum_sq += age_weight_[size_t(k - 1)] * age_weight_[size_t(k - 1)];
    effective_windows_[size_t(k)] = sum * sum / sum_sq;
  }
}

void RankTimeModels::reset() {
  history_.clear();
  models_.clear();
  readings_.clear();
  restarts_.clear();
  before_slowdown_.clear();
  last_log_ratio_.clear();
  model_error_ = persistence_error_ = noise_error_ = 0;
  scored_windows_ = 0;
}

std::vector<double> RankTimeModels::fit_weights(const std::deque<Observation>& obs) const {
  // Every observation counts at least one step (observe()), so `most` is at least 1.
  std::vector<double> w(obs.size());
  double most = 1;
  for (const Observation& o : obs) most = std::max(most, o.count);
  for (size_t k = 0; k < obs.size(); ++k) w[k] = age_weight_[obs.size() - 1 - k] * (obs[k].count / most);
  return w;
}

RankTimeModels::Model RankTimeModels::fit(const std::deque<Observation>& obs) const {
  Model m;
  if (obs.empty()) return m;
  const size_t n = obs.size();
  // A window's mean scatters less the more steps it has: the weights discount age and short windows.
  const std::vector<double> w = fit_weights(obs);
  auto point = [&](size_t k) { return WeightedPoint{obs[k].batch, obs[k].seconds, w[k]}; };
  auto [lo, hi] = std::minmax_element(
      obs.begin(), obs.end(), [](const Observation& a, const Observation& b) { return a.batch < b.batch; });
  if (n >= size_t(kMinAffineObservations) && hi->batch - lo->batch >= 0.5) {
    // The fixed cost alpha is kept only where it is significant: batches that barely vary under
    // noisy times give a slope of pure noise (a homogeneous cluster would then split its batch
    // 16..51 on a 32 plan). And only where the slope is determined too: over batches 47-59 with
    // times that wander 10-15 % between windows (ranks sharing cores), a slope near 0 makes the
    // intercept all of the time and "significant", a model in which the rank's batch hardly
    // matters (alpha 35 ms, beta 0.016 ms on a rank at 36 ms: the README demo, 2026-11-29), and
    // the split proposed moving 16 of such a rank's 47 samples to another (docs/AGENT.md item 21).
    const AffineFit f = fit_affine(n, point);
    if (f.ok && f.slope > kBetaSignificance * f.slope_se &&
        f.intercept > kAlphaSignificance * f.intercept_se) {
      m.alpha = f.intercept;
      m.beta = f.slope;
    }
  }
  if (!(m.beta > 0)) {
    // One batch size seen, or no significant fixed cost: the proportional prior t = beta·b.
    m.alpha = 0;
    m.beta = fit_through_origin(n, point);
  }
  m.valid = std::isfinite(m.alpha) && std::isfinite(m.beta) && m.beta > 0;
  return m;
}

double RankTimeModels::residual(const std::deque<Observation>& obs, const Model& m) const {
  if (!m.valid || obs.size() < 2) return 0;
  double sum = 0, weights = 0, weight = 1;
  for (auto it = obs.rbegin(); it != obs.rend(); ++it, weight *= options_.forget) {
    const double r = it->seconds / m.at(it->batch) - 1;
    sum += weight * r * r;
    weights += weight;
  }
  return std::sqrt(sum / weights);
}

void RankTimeModels::observe(const ClusterState& state, const std::vector<uint8_t>* spells,
                             const std::vector<bool>* alarmed) {
  const size_t n = state.nodes.size();
  if (history_.size() != n) {
    reset();
    history_.assign(n, {});
    models_.assign(n, {});
    restarts_.assign(n, {});
    before_slowdown_.assign(n, {});
  }
  readings_.assign(n, {});
  for (size_t i = 0; i < n; ++i) {
    const NodeRecord& r = state.nodes[i];
    Reading& reading = readings_[i];
    auto& h = history_[i];
    if (std::isfinite(r.compute_s) && r.compute_s > 0 && r.batch_size > 0) {
      const Model& m = models_[i];
      if (m.valid) {
        const double predicted = m.at(r.batch_size);
        reading.surprise = r.compute_s / predicted;
        // A large misprediction means the rank changed (slowdown, interference): start afresh, or
        // (Options::spells) resume the history from before a slowdown that ended.
        const bool fresh = options_.spells && h.size() == 1 && h.front().after_restart;
        const bool by_alarm = alarmed && i < alarmed->size() && (*alarmed)[i];
        const bool recent = (fresh || by_alarm) && has_recent(r);
        const double measured = recent ? r.compute_recent_s : r.compute_s;
        const bool ended = options_.spells && (spell_flags(spells, i) & kSpellEnded);
        const bool over = measured > predicted && ended;
        const bool returned = ended && spell_returned(i, r, predicted);
        // The run's first window is judged too where its misprediction cannot be the proportional
        // prior's extrapolation, only a change: at the same batch (a rank slowed 4.6x in the run's
        // second window was held through it, as noise, for a whole window), or at another batch
        // 1.5x beyond what any fixed cost explains, either way (a spell over a real run's first 6
        // steps moved two equal ranks to 18 of 32 at step 7; back at their speed they ran 2-2.5x
        // faster than that window's model, which could not restart, and the plan crawled back over
        // 60-240 steps; docs/AGENT.md item 36).
        const bool first_window = h.size() == 1 && !h.front().after_restart;
        // (A one-window model is the proportional prior: kMinAffineObservations.)
        const bool first_beyond = first_window && h.front().batch != double(r.batch_size) &&
                                  beyond_extrapolation(measured, predicted, h.front().batch, r.batch_size,
                                                       options_.change_threshold);
        const bool first_judged = first_window && h.front().batch == double(r.batch_size);
        const bool shifted = options_.level_shifts && h.size() >= kShiftHistory &&
                             spell_flags(spells, i) == 0 && !tracking() && level_shift(i, r, predicted);
        if (!over && (first_beyond || ((h.size() >= 2 || fresh || first_judged) &&
                                       (off_by_more_than(measured, predicted, options_.change_threshold) ||
                                        returned || shifted)))) {
          auto& log = restarts_[i];
          const bool slower = measured > predicted && !returned;
          const bool back = returned || (!slower && undoes_slowdown(i, r.batch_size, predicted, measured));
          if (slower) before_slowdown_[i] = h;
          h.clear();
          if (back) h = before_slowdown_[i];
          reading.restarted = true;
          reading.resumed = back;
          log.push_back({state.global.step, slower, m});
          if (log.size() > kRestartLog) log.pop_front();
        }
      }
      // A rank's first window with a spell still open at its end (SpellWatch's start references): the
      // spell is the rank's speed now, read by the window's last quarter as a restart is, and the
      // next window judges it as one (a spell over by then is not fitted: its mean is no speed).
      const uint8_t flags = spell_flags(spells, i);
      const bool first_open = options_.spells && !m.valid && h.empty() && (flags & kSpellBegan) &&
                              !(flags & kSpellEnded) && has_recent(r);
      const bool after_only =
          (reading.restarted || first_open) && options_.restart_at_recent && has_recent(r);
      // The window's relative variance per step. A restart window's scatter mixes the before and
      // the after (a first window's spell, its calm steps and the spell's): it says nothing of the noise.
      const double rel_var = r.compute_rel_se * r.compute_rel_se * r.steps;
      const bool scatter = !reading.restarted && !first_open && r.steps >= 2 && std::isfinite(rel_var);
      if (reading.restarted || flags == 0 || first_open) {
        h.push_back({double(r.batch_size), after_only ? r.compute_recent_s : r.compute_s,
                     double(std::max<int64_t>(1, after_only ? recent_steps(r.steps) : r.steps)), scatter,
                     scatter ? rel_var : 0, (reading.restarted || first_open) && h.empty()});
        while (h.size() > size_t(options_.history)) h.pop_front();
        models_[i] = fit(h);
      }
    }
    reading.residual = residual(h, models_[i]);
    reading.observations = int32_t(h.size());
    read_step_noise(h, reading);
  }
  if (options_.score_persistence) score_forecasts(state, spells);
}

bool RankTimeModels::prior_bounds_growth(size_t i, double batch) const {
  if (i >= history_.size() || history_[i].empty() || !models_[i].valid || models_[i].alpha != 0) return false;
  // The weighted fit through the origin of times alpha + beta·b has slope beta + alpha·Σwb/Σwb²,
  // so it overestimates the time at b exactly where b >= Σwb²/Σwb (alpha >= 0).
  const std::deque<Observation>& h = history_[i];
  const std::vector<double> weights = fit_weights(h);
  double wb = 0, wbb = 0;
  for (size_t k = 0; k < h.size(); ++k) {
    const double w = weights[k];
    wb += w * h[k].batch, wbb += w * h[k].batch * h[k].batch;
  }
  return wb > 0 && batch >= wbb / wb;
}

bool RankTimeModels::undoes_slowdown(size_t i, double batch, double predicted, double t) const {
  // Log scale; the models before and during the slowdown, compared at this batch, so a fixed cost
  // cancels.
  const std::deque<Restart>& log = restarts_[i];
  if (!options_.spells || log.empty() || !log.back().slower || !log.back().before.valid) return false;
  const double slowdown = predicted / log.back().before.at(batch);
  return slowdown > 1 && t <= predicted / std::sqrt(slowdown);
}

bool RankTimeModels::spell_returned(size_t i, const NodeRecord& r, double predicted) const {
  if (!has_recent(r)) return false;
  // The quarter's mean scatters by the rank's step noise over its steps: a noisy rank's quarter of
  // one or two steps passed for a return (214 ranks at 28 % step noise, window 5: 1.7 % slower
  // than the best heuristic), so the return must clear kReturnZ of that.
  Reading now, before;
  read_step_noise(history_[i], now);
  read_step_noise(before_slowdown_[i], before);
  const double se = std::max(now.step_noise, before.step_noise) /
                    std::sqrt(double(recent_steps(std::max<int64_t>(r.steps, 1))));
  return undoes_slowdown(i, r.batch_size, predicted, r.compute_recent_s * std::exp(kReturnZ * se));
}

bool RankTimeModels::level_shift(size_t i, const NodeRecord& r, double predicted) const {
  const std::deque<Observation>& h = history_[i];
  if (r.steps < 2 || !has_recent(r)) return false;
  Reading noise;
  read_step_noise(h, noise);
  if (!(noise.step_noise > 0)) return false;
  // A window whose last quarter differs from its mean holds a change inside: its mean is neither
  // level, and the regular rule (or the next window) reads it.
  const double quarter_se = noise.step_noise / std::sqrt(double(recent_steps(r.steps)));
  if (std::fabs(std::log(r.compute_recent_s / r.compute_s)) > kShiftZ * quarter_se) return false;
  // A model that has seen one batch size extrapolates through the origin: off by up to the
  // batches' ratio where the time is all fixed cost.
  const double shape = std::fabs(std::log(double(r.batch_size) / h.back().batch));
  const double mean_se = noise.step_noise / std::sqrt(double(r.steps));
  return std::fabs(std::log(r.compute_s / predicted)) > kShiftFloor + shape + kShiftZ * mean_se;
}

void RankTimeModels::read_step_noise(const std::deque<Observation>& obs, Reading& reading) const {
  // The median window, not the mean: a window with a change inside that stayed under the restart
  // threshold (a speed-up to 0.7x, a short stall) scatters its steps by the change, not by noise.
  std::vector<double> variances;
  double steps = 0;
  for (const Observation& o : obs) {
    if (!o.scatter) continue;
    variances.push_back(o.rel_var);
    steps += o.count;
  }
  reading.step_noise = variances.empty() ? 0 : std::sqrt(median(variances));
  reading.noise_steps = steps / kMedianVarianceCost;
}

void RankTimeModels::score_forecasts(const ClusterState& state, const std::vector<uint8_t>* spells) {
  const size_t n = state.nodes.size();
  last_log_ratio_.resize(n, std::nan(""));
  double model_sq = 0, persistence_sq = 0, noise_sq = 0;
  int32_t scored = 0;
  for (size_t i = 0; i < n; ++i) {
    const NodeRecord& r = state.nodes[i];
    const bool measured =
        std::isfinite(r.compute_s) && r.compute_s > 0 && r.batch_size > 0 && spell_flags(spells, i) == 0;
    // A restart is a jump, which the restart itself handles; only steady windows are scored. A
    // finite last ratio means the model before this window was valid, and surprise is its forecast.
    if (measured && !readings_[i].restarted && std::isfinite(last_log_ratio_[i])) {
      const double e = std::log(readings_[i].surprise);
      model_sq += e * e;
      persistence_sq += (e - last_log_ratio_[i]) * (e - last_log_ratio_[i]);
      noise_sq += forecast_noise_variance(readings_[i], r.steps);
      ++scored;
    }
    const Model& m = models_[i];
    last_log_ratio_[i] = measured && m.valid && m.at(r.batch_size) > 0 && !readings_[i].restarted
                             ? std::log(r.compute_s / m.at(r.batch_size))
                             : std::nan("");
  }
  if (scored == 0) return;
  model_error_ = options_.forget * model_error_ + model_sq / scored;
  persistence_error_ = options_.forget * persistence_error_ + persistence_sq / scored;
  noise_error_ = options_.forget * noise_error_ + noise_sq / scored;
  ++scored_windows_;
}

double RankTimeModels::forecast_noise_variance(const Reading& reading, int32_t steps) const {
  if (!(reading.step_noise > 0) || steps < 1) return 0;  // unknown: the whole error counts as excess
  // The forecast came from the windows before this one (observations - 1), weighted by age.
  const double fitted = effective_windows_[size_t(std::clamp(reading.observations - 1, 0, options_.history))];
  return reading.step_noise * reading.step_noise / steps * (1 + 1 / fitted);
}

double RankTimeModels::excess_forecast_rms() const {
  if (scored_windows_ < kTrackingWindows) return std::nan("");
  return std::sqrt(std::max(0.0, model_error_ - noise_error_) / forgetting_weights());
}

bool RankTimeModels::tracking() const {
  return scored_windows_ >= kTrackingWindows && model_error_ > 0 &&
         persistence_error_ < kTrackingShare * model_error_;
}

double RankTimeModels::forgetting_weights() const {
  const double f = options_.forget;
  return f < 1 ? (1 - std::pow(f, scored_windows_)) / (1 - f) : scored_windows_;
}

double RankTimeModels::persistence_rms() const {
  if (scored_windows_ == 0) return 0;
  // persistence_error_ sums forget^age over the scored windows: divide by the weights' sum.
  return std::sqrt(persistence_error_ / forgetting_weights());
}

bool RankTimeModels::ready() const {
  return !models_.empty() &&
         std::all_of(models_.begin(), models_.end(), [](const Model& m) { return m.valid; });
}

double RankTimeModels::split(double global_batch, const std::vector<double>& lo,
                             const std::vector<double>& hi, std::vector<double>& b,
                             const std::vector<double>* scale) const {
  return split_batch(models_, global_batch, lo, hi, b, scale);
}

double split_batch(const std::vector<RankTimeModels::Model>& models, double global_batch,
                   const std::vector<double>& lo, const std::vector<double>& hi, std::vector<double>& b,
                   const std::vector<double>* scale) {
  const size_t n = models.size();
  b.resize(n);
  std::vector<double> a(n), c(n);
  for (size_t i = 0; i < n; ++i) {
    const double s = scale ? (*scale)[i] : 1.0;
    a[i] = models[i].alpha * s;
    c[i] = models[i].beta * s;
  }
  auto fill = [&](double T) {
    double total = 0;
    for (size_t i = 0; i < n; ++i) {
      b[i] = std::clamp((T - a[i]) / c[i], lo[i], hi[i]);
      total += b[i];
    }
    return total;
  };
  double t_lo = HUGE_VAL, t_hi = 0;
  for (size_t i = 0; i < n; ++i) {
    t_lo = std::min(t_lo, a[i] + c[i] * lo[i]);
    t_hi = std::max(t_hi, a[i] + c[i] * hi[i]);
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
  for (size_t i = 0; i < n; ++i) t_max = std::max(t_max, a[i] + c[i] * b[i]);
  return t_max;
}

void rank_bounds(const BatchBounds& bounds, size_t ranks, std::vector<double>& lo, std::vector<double>& hi) {
  lo.resize(ranks);
  hi.resize(ranks);
  for (size_t i = 0; i < ranks; ++i) {
    lo[i] = std::max(1, bounds.min);
    hi[i] = std::max(lo[i], double(rank_max(bounds, i)));
  }
}

double goodput_batch(const RankTimeModels& models, const BatchBounds& bounds, double current,
                     double overhead_s, double noise_scale, double min_gain, int32_t grid) {
  const size_t n = models.models().size();
  std::vector<double> lo, hi, b;
  rank_bounds(bounds, n, lo, hi);
  // Goodput up to a constant factor: E(B) ∝ 1 / (B_noise + B), so B0 does not move the argmax.
  auto goodput = [&](double B) { return B / (models.split(B, lo, hi, b) + overhead_s) / (noise_scale + B); };
  const double m = bounds.max_change;
  double b_min = std::accumulate(lo.begin(), lo.end(), 0.0),
         b_max = std::accumulate(hi.begin(), hi.end(), 0.0);
  if (std::isfinite(m) && m > 0) {  // only what this window may reach
    b_min = std::max(b_min, current * (1 - m));
    b_max = std::min(b_max, current * (1 + m));
  }
  // Below the initial B the learning rate falls under the one the run was tuned for, and with a
  // small early noise scale the search shrank B to 60 % of it: as many samples to the target at
  // 29 % less throughput (docs/RESULTS.md §3d). AdaptDL searches from init_batch_size up, too.
  if (!bounds.fixed_global && bounds.global_batch > 0)
    b_min = std::max(b_min, std::min(double(bounds.global_batch), current));
  if (!(b_max > b_min)) return current;
  double best = current, best_g = goodput(current);
  const double g_cur = best_g;
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
  return best_g > g_cur * (1 + min_gain) ? best : current;
}

}  // namespace dynamix
