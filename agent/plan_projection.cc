// DYNAMIX — projection of a desired batch plan onto bounds, change limits and a fixed global batch.
#include "agent/plan_projection.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <queue>
#include <string>
#include <utility>

#include "framework/core/error.h"

namespace dynamix {
namespace {

constexpr int64_t kUnbounded = int64_t{1} << 30;  // "no b_max": large, yet sums stay exact in int64

int64_t sum_of(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

// Integers y_i in [L_i, H_i] with sum == T (requires sum L <= T <= sum H), close to the real
// targets x_i > 0: first the continuous fit y_i = clamp(s·x_i, L_i, H_i) with s found by bisection
// (the sum is monotone in s), then rounding that keeps the largest relative excess over the fit
// smallest, moving only ranks with room.
std::vector<int32_t> fit_sum(const std::vector<double>& x, const std::vector<int64_t>& L,
                             const std::vector<int64_t>& H, int64_t T) {
  const size_t n = x.size();
  std::vector<double> y(n);
  auto fill = [&](double s) {
    double total = 0;
    for (size_t i = 0; i < n; ++i) {
      y[i] = std::clamp(x[i] * s, double(L[i]), double(H[i]));
      total += y[i];
    }
    return total;
  };
  double s_lo = HUGE_VAL, s_hi = 0;
  for (size_t i = 0; i < n; ++i) {
    s_lo = std::min(s_lo, double(L[i]) / x[i]);
    s_hi = std::max(s_hi, double(H[i]) / x[i]);
  }
  for (int it = 0; it < 200 && s_hi > s_lo * (1 + 1e-15); ++it) {
    const double mid = std::sqrt(s_lo) * std::sqrt(s_hi);  // geometric: the range may span decades
    if (fill(mid) < double(T))
      s_lo = mid;
    else
      s_hi = mid;
  }
  fill(0.5 * (s_lo + s_hi));

  std::vector<int64_t> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = std::clamp(int64_t(std::floor(y[i])), L[i], H[i]);
  // The units left over (floors never exceed the fit, whose sum is T) go one at a time where they
  // raise a rank least relative to its continuous share: (f_i + 1) / y_i smallest first. This
  // minimises the largest relative excess over the continuous plan: where that plan equalises
  // predicted times, one sample more on a rank of 10 costs it 10 %, on a rank of 50 only 2 %, and
  // the step waits for the slowest rank. Ties go to the lower rank.
  using Entry = std::pair<double, size_t>;  // ((f_i + 1) / y_i, i)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> next;
  for (size_t i = 0; i < n; ++i)
    if (f[i] < H[i]) next.emplace(double(f[i] + 1) / y[i], i);
  for (int64_t left = T - sum_of(f); left > 0 && !next.empty(); --left) {
    const size_t i = next.top().second;
    next.pop();
    if (++f[i] < H[i]) next.emplace(double(f[i] + 1) / y[i], i);
  }
  return std::vector<int32_t>(f.begin(), f.end());
}

void add_note(BatchPlan& plan, const std::string& note) {
  if (!plan.note.empty()) plan.note += "; ";
  plan.note += note;
}

// project_plan in units of b.multiple samples (see plan_projection.h).
BatchPlan project_in_units(std::vector<double> desired, const std::vector<int32_t>& current,
                           const BatchBounds& b, const std::vector<double>* centre) {
  const int32_t k = b.multiple;
  const size_t n = current.size();
  BatchBounds u = b;
  u.multiple = 1;
  u.min = least_batch(b) / k;
  for (int32_t& m : u.max) m /= k;  // empty: unbounded
  std::string note;
  if (b.fixed_global) {
    // B as given, or the current plan's where none is.
    const int64_t global = b.global_batch > 0 ? int64_t(b.global_batch)
                                              : std::accumulate(current.begin(), current.end(), int64_t{0});
    u.global_batch = std::max<int32_t>(1, int32_t(std::lround(double(global) / k)));
    if (int64_t(u.global_batch) * k != global)
      note = "global batch " + std::to_string(global) + " is not a multiple of batch.multiple " +
             std::to_string(k) + ": using " + std::to_string(int64_t(u.global_batch) * k);
  }
  std::vector<int32_t> cur(n);
  for (size_t i = 0; i < n; ++i) cur[i] = std::max(1, int32_t(std::lround(double(current[i]) / k)));
  for (double& x : desired) x /= k;
  std::vector<double> c;
  if (centre) {
    c = *centre;
    for (double& x : c) x /= k;
  }
  BatchPlan plan = project_plan(std::move(desired), cur, u, centre ? &c : nullptr);
  for (int32_t& x : plan.batch_sizes) x *= k;
  if (!note.empty()) add_note(plan, note);
  return plan;
}

}  // namespace

int32_t rank_max(const BatchBounds& b, size_t i) {
  if (b.max.empty()) return int32_t(kUnbounded);
  return b.max.size() == 1 ? b.max[0] : b.max[i];
}

int32_t least_batch(const BatchBounds& b) {
  const int32_t k = std::max(1, b.multiple);
  return (std::max(1, b.min) + k - 1) / k * k;
}

bool plan_within(const std::vector<int32_t>& plan, const BatchBounds& b, size_t world, std::string* why) {
  if (plan.size() != world) {
    *why = "plan has " + std::to_string(plan.size()) + " entries for " + std::to_string(world) + " ranks";
    return false;
  }
  for (size_t i = 0; i < plan.size(); ++i) {
    if (plan[i] < std::max(1, b.min) || plan[i] > rank_max(b, i)) {
      *why = "b_" + std::to_string(i) + " = " + std::to_string(plan[i]) + " outside [" +
             std::to_string(b.min) + ", " + std::to_string(rank_max(b, i)) + "]";
      return false;
    }
    if (plan[i] % std::max(1, b.multiple) != 0) {
      *why = "b_" + std::to_string(i) + " = " + std::to_string(plan[i]) +
             " not a multiple of batch.multiple " + std::to_string(b.multiple);
      return false;
    }
  }
  return true;
}

BatchPlan project_plan(std::vector<double> desired, const std::vector<int32_t>& current, const BatchBounds& b,
                       const std::vector<double>* centre) {
  const size_t n = current.size();
  DYNAMIX_CHECK(desired.size() == n, "project_plan: desired plan has " + std::to_string(desired.size()) +
                                         " entries, current plan " + std::to_string(n));
  DYNAMIX_CHECK(!centre || centre->size() == n, "project_plan: centre has " +
                                                    std::to_string(centre ? centre->size() : 0) +
                                                    " entries, current plan " + std::to_string(n));
  DYNAMIX_CHECK(b.max.size() <= 1 || b.max.size() == n,
                "project_plan: bounds.max has " + std::to_string(b.max.size()) + " entries, expected 1 or " +
                    std::to_string(n) + " (one per rank)");
  if (b.multiple > 1) return project_in_units(std::move(desired), current, b, centre);
  BatchPlan plan;
  if (n == 0) return plan;

  // Hard bounds [L, H] and the per-window change band [bl, bh] inside them.
  const int64_t lo = std::max<int64_t>(1, b.min);
  std::vector<int64_t> L(n, lo), H(n), bl(n), bh(n);
  const double m = b.max_change;
  const bool limit_change = std::isfinite(m) && m > 0;
  int bad_max = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t mx = rank_max(b, i);
    if (mx < lo) ++bad_max;
    H[i] = std::max(lo, mx);
    const int64_t cur = std::clamp<int64_t>(current[i], L[i], H[i]);
    const double c = centre ? (*centre)[i] : double(cur);
    if (limit_change && std::isfinite(c) && c > 0) {
      // A step of 1 is always allowed so that small batches are not frozen by rounding.
      const int64_t down = std::min<int64_t>(int64_t(std::ceil(c * (1 - m) - 1e-9)), cur - 1);
      const int64_t up = std::max<int64_t>(int64_t(std::floor(c * (1 + m) + 1e-9)), cur + 1);
      bl[i] = std::clamp(down, L[i], H[i]);
      bh[i] = std::clamp(up, L[i], H[i]);
    } else {
      bl[i] = L[i];
      bh[i] = H[i];
    }
    double& x = desired[i];
    if (!std::isfinite(x)) x = double(cur);
    x = std::clamp(x, double(bl[i]), double(bh[i]));
  }
  if (bad_max > 0) add_note(plan, std::to_string(bad_max) + " rank(s) have b_max < b_min; using b_min");

  if (!b.fixed_global) {
    plan.batch_sizes.resize(n);
    for (size_t i = 0; i < n; ++i)
      plan.batch_sizes[i] = int32_t(std::clamp<int64_t>(std::llround(desired[i]), bl[i], bh[i]));
    return plan;
  }

  int64_t T = b.global_batch;
  if (T <= 0) {
    T = std::accumulate(current.begin(), current.end(), int64_t{0});
    add_note(plan, "global_batch unset; keeping the current sum " + std::to_string(T));
  }
  const int64_t sum_L = sum_of(L), sum_H = sum_of(H), sum_bl = sum_of(bl), sum_bh = sum_of(bh);
  if (T < sum_L || T > sum_H) {
    const bool low = T < sum_L;
    plan.batch_sizes.assign(low ? L.begin() : H.begin(), low ? L.end() : H.end());
    add_note(plan, "global batch " + std::to_string(T) + " infeasible: bounds allow [" +
                       std::to_string(sum_L) + ", " + std::to_string(sum_H) + "]; using " +
                       std::to_string(low ? sum_L : sum_H));
  } else if (T >= sum_bl && T <= sum_bh) {
    plan.batch_sizes = fit_sum(desired, bl, bh, T);
  } else if (T > sum_bh) {
    plan.batch_sizes = fit_sum(desired, bh, H, T);
    add_note(plan, "max_change relaxed to keep the global batch " + std::to_string(T));
  } else {
    plan.batch_sizes = fit_sum(desired, L, bl, T);
    add_note(plan, "max_change relaxed to keep the global batch " + std::to_string(T));
  }
  return plan;
}

}  // namespace dynamix
