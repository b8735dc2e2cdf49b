// DYNAMIX — recurring interference: hold the slow phase's plan where that is cheaper per cycle.
#include "agent/recurring_slowdown.h"

#include <algorithm>
#include <cmath>

namespace dynamix {
namespace {

constexpr double kMinSlowdown = 1.2;  // a slow phase at least this much slower than the fast one
constexpr double kLapse = 1.5;        // a fast phase this much longer than the longest seen: it ended

struct Phase {
  bool fast = false;  // recovered from its third slow phase, the next one still expected
  bool slow = false;  // in a slow phase that came back
  double fast_steps = 0;
  // The models in force before the last slow phase began and before it ended: fixed for the whole
  // fast phase, so one phase gets one answer (the live models move with the plan).
  RankTimeModels::Model fast_model, slow_model;
};

// Restarts newest last: three slow phases, each followed by a recovery, is a rank in the fast phase
// of recurring interference (two could be a coincidence: on random clusters where a slowdown came
// twice and not again, holding for the third cost up to 0.6 %); slower, faster, slower is one in a
// slow phase that came back.
Phase read_phase(const std::deque<RankTimeModels::Restart>& log, int64_t now) {
  Phase p;
  const size_t n = log.size();
  if (n >= 3 && log[n - 1].slower && !log[n - 2].slower && log[n - 3].slower) p.slow = true;
  if (n < 6) return p;
  for (size_t k = 0; k < 6; ++k) {
    if (log[n - 6 + k].slower != (k % 2 == 0)) return p;  // slower, faster, ... in turn
  }
  const auto &r1 = log[n - 5], &s2 = log[n - 4], &r2 = log[n - 3], &s3 = log[n - 2], &r3 = log[n - 1];
  p.fast_steps = double(std::max(s2.step - r1.step, s3.step - r2.step));
  p.fast =
      p.fast_steps > 0 && double(now - r3.step) < kLapse * p.fast_steps && r3.before.valid && s3.before.valid;
  p.fast_model = s3.before;
  p.slow_model = r3.before;
  return p;
}

// max_i scale_i·t_i(b_i): the predicted compute time of plan b with rank i `scale_i` times slower.
double slowest(const std::vector<RankTimeModels::Model>& models, const std::vector<double>& b,
               const std::vector<double>& scale) {
  double t = 0;
  for (size_t i = 0; i < b.size(); ++i) t = std::max(t, scale[i] * models[i].at(b[i]));
  return t;
}

}  // namespace

RecurringHedge hedge_recurring(const ClusterState& state, const RankTimeModels& models, double global_batch,
                               const std::vector<double>& lo, const std::vector<double>& hi,
                               double latency_steps) {
  RecurringHedge h;
  const size_t n = state.nodes.size();
  if (models.models().size() != n || !models.ready()) return h;
  // How much slower a rank's slow phase runs, where it is in the fast phase of a pattern worth
  // holding for (0 otherwise; the slow phase of a pattern: -1).
  const double mean_batch = global_batch / double(n);
  auto slowdown_of = [&](size_t i, Phase& p) {
    p = read_phase(models.restarts(i), state.global.step);
    if (p.slow) return -1.0;
    if (!p.fast) return 0.0;
    const double k = p.slow_model.at(mean_batch) / p.fast_model.at(mean_batch);
    return k >= kMinSlowdown && std::isfinite(k) ? k : 0.0;
  };
  // Most decisions find no recurring rank: read the logs first, copy the models only then.
  double fast_steps = 0;
  Phase p;
  for (size_t i = 0; i < n; ++i) {
    const double k = slowdown_of(i, p);
    // A rank in the slow phase of its own pattern while others are in their fast phase is a wave
    // passing over the cluster, which no single held plan serves: follow it.
    if (k < 0) return h;
    if (k > 0) fast_steps = std::max(fast_steps, p.fast_steps);  // the longest: the cautious side
  }
  if (!(fast_steps > 0)) return h;
  h.recurring = true;
  std::vector<RankTimeModels::Model> fast = models.models();
  std::vector<double> slow_scale(n, 1.0);
  for (size_t i = 0; i < n; ++i) {
    const double k = slowdown_of(i, p);
    if (k > 0) fast[i] = p.fast_model, slow_scale[i] = k;
  }
  std::vector<double> held, followed;
  // split_batch returns each split's own slowest time: under fast speeds for the followed plan,
  // under slow ones for the held plan.
  const double followed_fast = split_batch(fast, global_batch, lo, hi, followed);
  const double held_slow = split_batch(fast, global_batch, lo, hi, held, &slow_scale);
  const std::vector<double> none(n, 1.0);
  const double extra_fast = std::max(0.0, slowest(fast, held, none) - followed_fast);
  const double extra_slow = std::max(0.0, slowest(fast, followed, slow_scale) - held_slow);
  h.hold_cost = std::max(0.0, fast_steps - latency_steps) * extra_fast;
  h.follow_cost = latency_steps * extra_slow;
  h.hold = h.hold_cost < h.follow_cost;
  if (h.hold) h.plan = std::move(held);
  return h;
}

}  // namespace dynamix
