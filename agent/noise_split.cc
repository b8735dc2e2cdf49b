// DYNAMIX — the noise-aware split: E[max] of independent normals and the search over z.
#include "agent/noise_split.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "framework/core/stats.h"

namespace dynamix {
namespace {

constexpr double kTails = 8;        // standard deviations beyond which Phi is taken as 0 or 1
constexpr int kIntervals = 64;      // Simpson intervals over the range that matters
constexpr double kGroupTol = 1e-7;  // relative difference below which two ranks count as one
constexpr int kGrid = 5;            // z grid over [0, max_z], then golden-section refinement
constexpr int kRefine = 6;
// Noise levels are rounded to steps of this log size: ranks of about the same noise then share a
// (mean, sd) after the split and E[max] evaluates them once (1024 ranks stay within the latency goal).
constexpr double kNoiseStep = 0.1;

struct Group {
  double mean, sd, count;
};

// Ranks with the same (mean, sd) up to kGroupTol, as one factor Phi^count.
std::vector<Group> group_ranks(const std::vector<double>& mean, const std::vector<double>& sd) {
  std::vector<std::pair<double, double>> p(mean.size());
  for (size_t i = 0; i < mean.size(); ++i) p[i] = {mean[i], std::max(0.0, sd[i])};
  std::sort(p.begin(), p.end());
  std::vector<Group> groups;
  for (const auto& [m, s] : p) {
    auto close = [](double a, double b) {
      return std::abs(a - b) <= kGroupTol * std::max(std::abs(a), std::abs(b));
    };
    if (!groups.empty() && close(groups.back().mean, m) && close(groups.back().sd, s))
      groups.back().count += 1;
    else
      groups.push_back({m, s, 1});
  }
  return groups;
}

// log P(max <= t).
double log_cdf_of_max(const std::vector<Group>& groups, double t) {
  double log_f = 0;
  for (const Group& g : groups) {
    if (g.sd <= 0) {
      if (t < g.mean) return -HUGE_VAL;
      continue;
    }
    const double x = (t - g.mean) / g.sd;
    if (x > kTails) continue;  // Phi(x) = 1 to double precision
    const double phi = 0.5 * std::erfc(-x / std::sqrt(2.0));
    if (phi <= 0) return -HUGE_VAL;
    log_f += g.count * std::log(phi);
  }
  return log_f;
}

// The ranks' noise, each shrunk to the median rank's unless it differs by more than min_ratio and
// `significance` standard errors of its log (about 1/sqrt(2·steps) for a standard deviation).
// Empty when no rank differs.
std::vector<double> differing_noise(const RankTimeModels& models, const NoiseSplitOptions& o) {
  const auto& readings = models.readings();
  std::vector<double> noise;
  for (const auto& r : readings) {
    if (!(r.step_noise > 0) || r.noise_steps < 2) return {};
    noise.push_back(r.step_noise);
  }
  if (noise.size() < 2) return {};
  const double center = median(noise);
  bool any = false;
  for (size_t i = 0; i < noise.size(); ++i) {
    const double log_ratio = std::abs(std::log(noise[i] / center));
    const double se = 1 / std::sqrt(2 * (readings[i].noise_steps - 1));
    const bool differs = readings[i].observations >= o.min_windows && log_ratio > std::log(o.min_ratio) &&
                         log_ratio > o.significance * se;
    if (differs)
      any = true;
    else
      noise[i] = center;
    noise[i] = std::exp(kNoiseStep * std::round(std::log(noise[i]) / kNoiseStep));
  }
  return any ? noise : std::vector<double>{};
}

}  // namespace

double expected_max_normal(const std::vector<double>& mean, const std::vector<double>& sd) {
  if (mean.empty()) return 0;
  const std::vector<Group> groups = group_ranks(mean, sd);
  double lo = -HUGE_VAL, hi = -HUGE_VAL;
  for (const Group& g : groups) {
    lo = std::max(lo, g.mean - kTails * g.sd);  // below the largest lower tail P(max <= t) ~ 0
    hi = std::max(hi, g.mean + kTails * g.sd);  // above every upper tail P(max <= t) ~ 1
  }
  if (!(hi > lo)) return hi;
  // E[max] = lo + integral over [lo, hi] of (1 - P(max <= t)) dt, by Simpson's rule.
  const double h = (hi - lo) / kIntervals;
  double sum = 0;
  for (int k = 0; k <= kIntervals; ++k) {
    const double w = (k == 0 || k == kIntervals) ? 1 : (k % 2 ? 4 : 2);
    sum += w * (1 - std::exp(log_cdf_of_max(groups, lo + k * h)));
  }
  return lo + sum * h / 3;
}

namespace {

// E[max_i t_i] of one step where rank i takes mean[i] with relative deviation noise[i].
double expected_step_time(const std::vector<double>& mean, const std::vector<double>& noise) {
  std::vector<double> sd(mean.size());
  for (size_t i = 0; i < mean.size(); ++i) sd[i] = noise[i] * mean[i];
  return expected_max_normal(mean, sd);
}

}  // namespace

std::vector<double> noise_split_scale(const RankTimeModels& models, double global_batch,
                                      const std::vector<double>& lo, const std::vector<double>& hi,
                                      const std::vector<double>* base, const NoiseSplitOptions& options,
                                      std::vector<double>* weighed) {
  const size_t n = models.models().size();
  if (weighed) weighed->clear();
  std::vector<double> ones(n, 1.0);
  // Drifting speeds scatter a window's steps as well: that spread is the drift, not noise.
  const bool usable = models.ready() && !models.tracking();
  const std::vector<double> noise = usable ? differing_noise(models, options) : std::vector<double>{};
  if (noise.size() != n) return ones;
  const std::vector<double> base_scale = base ? *base : ones;
  std::vector<double> scale, b, mean(n);
  auto factors = [&](double z, const std::vector<double>& times) {  // times·(1 + z·σ_i)
    std::vector<double> f(n);
    for (size_t i = 0; i < n; ++i) f[i] = times[i] * (1 + z * noise[i]);
    return f;
  };
  // E[max] of the split that equalises t_i(b_i)·(1 + z·σ_i).
  auto expected_step = [&](double z) {
    scale = factors(z, base_scale);
    models.split(global_batch, lo, hi, b, &scale);
    for (size_t i = 0; i < n; ++i) mean[i] = base_scale[i] * models.models()[i].at(b[i]);
    return expected_step_time(mean, noise);
  };
  const double balanced = expected_step(0);
  double best_z = 0, best = balanced;
  const double step = options.max_z / (kGrid - 1);
  for (int k = 1; k < kGrid; ++k) {
    const double e = expected_step(k * step);
    if (e < best) best = e, best_z = k * step;
  }
  // Golden-section refinement around the best grid point; each iteration keeps one of its two
  // inner points, so it costs one evaluation.
  const double phi = 0.5 * (std::sqrt(5.0) - 1);
  double z0 = std::max(0.0, best_z - step), z1 = std::min(options.max_z, best_z + step);
  double a = z1 - phi * (z1 - z0), c = z0 + phi * (z1 - z0);
  double ea = expected_step(a), ec = expected_step(c);
  for (int it = 0; it < kRefine; ++it) {
    if (ea < ec) {
      z1 = c, c = a, ec = ea;
      a = z1 - phi * (z1 - z0), ea = expected_step(a);
    } else {
      z0 = a, a = c, ea = ec;
      c = z0 + phi * (z1 - z0), ec = expected_step(c);
    }
  }
  const double refined = 0.5 * (z0 + z1);
  const double e = expected_step(refined);
  if (e < best) best = e, best_z = refined;
  if (!(best < balanced * (1 - options.min_gain))) return ones;
  if (weighed) *weighed = noise;
  return factors(best_z, ones);
}

double judged_step_time(const std::vector<double>& mean, const std::vector<double>& noise) {
  if (noise.size() == mean.size() && !mean.empty()) return expected_step_time(mean, noise);
  return mean.empty() ? 0 : *std::max_element(mean.begin(), mean.end());
}

double judged_step_time(const std::vector<RankTimeModels::Model>& models, const std::vector<int32_t>& plan,
                        const std::vector<double>& noise) {
  std::vector<double> t(plan.size());
  for (size_t i = 0; i < plan.size(); ++i) t[i] = models[i].at(plan[i]);
  return judged_step_time(t, noise);
}

}  // namespace dynamix
