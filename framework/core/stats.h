// DYNAMIX — small statistics every folder may use (header-only, no dependencies).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace dynamix {

// The middle value (the mean of the two middle ones for an even count); NaN when empty. Sorts `v`:
// for a buffer kept to be reused (no allocation per call).
inline double median_in_place(std::vector<double>& v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// The same of a copy.
inline double median(std::vector<double> v) { return median_in_place(v); }

// Standard deviations within which the extremes of n normal draws fall with little chance of more:
// 1 + sqrt(2 ln n) (sqrt(2 ln n) is the expected maximum's growth). A difference among n noisy
// estimates is taken as real only beyond this many of their standard errors.
inline double extremes_z(size_t n) { return 1 + std::sqrt(2 * std::log(double(std::max<size_t>(n, 1)))); }

// The chi-square quantile of `dof` degrees of freedom z standard normal deviations up (Wilson and
// Hilferty's cube-root approximation: within 1 % from 10 degrees of freedom at z up to 4.3, 6 % at 3): the
// bar for a sum of dof squared standard normal draws. 0 without degrees of freedom.
inline double chi_square_bar(size_t dof, double z) {
  if (dof == 0) return 0;
  const double k = double(dof), c = 2 / (9 * k);
  return k * std::pow(std::max(0.0, 1 - c + z * std::sqrt(c)), 3);
}

// How much wider a bar of normal standard errors must be when the standard error itself was
// estimated from dof + 1 draws: Student's t quantile at 0.975 over the normal's (1.96). 2.20 at
// dof 2, 1.62 at 3, 1.31 at 5, 1.07 at 19; past 30 the expansion's first terms in 1/dof (Cornish-Fisher).
inline double small_sample_widening(int64_t dof) {
  static constexpr double kT975[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                     2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                     2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof < 1) return HUGE_VAL;
  if (dof <= 30) return kT975[dof - 1] / 1.96;
  const double v = double(dof);
  return 1 + 1.210 / v + 1.440 / (v * v);
}

// Running mean and variance of a stream of values (Welford's update): one pass, no values kept.
struct RunningMean {
  int64_t n = 0;
  double mean = 0, m2 = 0;
  void add(double x) {
    ++n;
    const double d = x - mean;
    mean += d / double(n);
    m2 += d * (x - mean);
  }
  double variance() const { return n > 1 ? m2 / double(n - 1) : NAN; }  // sample variance
  double standard_error() const { return n > 1 ? std::sqrt(m2 / double(n - 1) / double(n)) : HUGE_VAL; }
};

// One point of a weighted fit (weight 0: ignored).
struct WeightedPoint {
  double x = 0, y = 0, w = 1;
};

// Weighted least squares y ≈ intercept + slope·x: the one affine fit of the code base (per-rank
// time models, simulator profiles, gradient noise scale).
struct AffineFit {
  double intercept = 0, slope = 0;
  // Standard error of the intercept, with the same noise variance on every point (estimated from
  // the weighted residuals) and the weights taken as given: the sandwich estimate, valid also when
  // the weights only discount age. Infinite with fewer than 3 points.
  double intercept_se = HUGE_VAL;
  double slope_se = HUGE_VAL;  // the same for the slope
  bool ok = false;             // positive total weight and spread in x: both terms identified
};

// point_at(k) -> WeightedPoint, k in [0, n): the points are read twice, nothing is stored.
template <class PointAt>
AffineFit fit_affine(size_t n, PointAt point_at) {
  AffineFit f;
  double sw = 0, sww = 0, sx = 0, sy = 0;
  for (size_t k = 0; k < n; ++k) {
    const WeightedPoint p = point_at(k);
    sw += p.w, sww += p.w * p.w, sx += p.w * p.x, sy += p.w * p.y;
  }
  if (!(sw > 0)) return f;
  const double xm = sx / sw, ym = sy / sw;
  double sxx = 0, sxy = 0;
  for (size_t k = 0; k < n; ++k) {
    const WeightedPoint p = point_at(k);
    sxx += p.w * (p.x - xm) * (p.x - xm);
    sxy += p.w * (p.x - xm) * (p.y - ym);
  }
  if (!(sxx > 1e-12 * sw * std::max(xm * xm, 1e-300))) return f;  // one distinct x
  f.ok = true;
  f.slope = sxy / sxx;
  f.intercept = ym - f.slope * xm;
  // intercept = sum_k l_k y_k with l_k = w_k (1/sw - xm (x_k - xm)/sxx).
  const double n_eff = sw * sw / sww;
  if (n < 3 || !(n_eff > 2)) return f;
  // slope = sum_k m_k y_k with m_k = w_k (x_k - xm)/sxx.
  double rss = 0, ll = 0, mm = 0;
  for (size_t k = 0; k < n; ++k) {
    const WeightedPoint p = point_at(k);
    const double r = p.y - f.intercept - f.slope * p.x;
    const double l = p.w * (1 / sw - xm * (p.x - xm) / sxx);
    const double m = p.w * (p.x - xm) / sxx;
    rss += p.w * r * r;
    ll += l * l;
    mm += m * m;
  }
  const double s2 = rss / sw * n_eff / (n_eff - 2);
  f.intercept_se = std::sqrt(s2 * ll);
  f.slope_se = std::sqrt(s2 * mm);
  return f;
}

// Weighted least squares y ≈ slope·x through the origin; 0 without weight or spread.
template <class PointAt>
double fit_through_origin(size_t n, PointAt point_at) {
  double sxy = 0, sxx = 0;
  for (size_t k = 0; k < n; ++k) {
    const WeightedPoint p = point_at(k);
    sxy += p.w * p.x * p.y;
    sxx += p.w * p.x * p.x;
  }
  return sxx > 0 ? sxy / sxx : 0;
}

// Relative standard error of a mean from the sum and the sum of squares of n values:
// sd / (sqrt(n) · mean), 0 when it cannot be estimated (n < 2 or a non-positive mean).
inline double relative_standard_error(double sum, double sum_sq, double n) {
  if (n < 2 || !(sum > 0)) return 0;
  const double mean = sum / n;
  const double variance = std::max(0.0, (sum_sq - n * mean * mean) / (n - 1));
  return std::sqrt(variance / n) / mean;
}

// The steps of a decision window that count as its recent part: the last quarter, at least one.
// Their mean compute time tells a change inside the window from the window's mean, which mixes the
// before and the after.
inline int64_t recent_steps(int64_t window_steps) { return std::max<int64_t>(1, window_steps / 4); }

// True when `measured` is off `expected` by more than `share` of it: the restart rule of the rank
// models, which the change alarm's confirmation also applies.
inline bool off_by_more_than(double measured, double expected, double share) {
  return std::fabs(measured - expected) > share * expected;
}

// A drifting speed (co-located load, thermal throttling): the slowdown factor `steps` steps into
// a drift moves smoothly from 1 to `slowdown` and back every `period` steps (a raised cosine).
// One formula for the simulator's drift events and the trainer's heterogeneity emulation.
inline double drift_factor(double slowdown, int64_t steps, int64_t period) {
  const double phase = 2 * M_PI * double(steps % period) / double(period);
  return std::pow(slowdown, 0.5 * (1 - std::cos(phase)));
}

}  // namespace dynamix
