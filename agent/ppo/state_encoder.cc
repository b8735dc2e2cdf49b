// DYNAMIX — the heuristics' proposals, scale-free features for the dynamix policy, and the
// Welford running normaliser.
#include "agent/ppo/state_encoder.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "agent/change_alarm.h"
#include "agent/noise_split.h"
#include "agent/plan_projection.h"
#include "agent/recurring_slowdown.h"
#include "framework/core/error.h"
#include "framework/core/stats.h"

namespace dynamix {
namespace {

double clamp(double v, double lo, double hi) { return std::min(hi, std::max(lo, v)); }
double safe_log1p(double v) { return std::log1p(clamp(v, 0, 1e30)); }

// The fields the encoder reads: one NaN/Inf among them makes the state unsafe.
const char* first_non_finite(const NodeRecord& n) {
  const std::pair<const char*, double> fields[] = {{"compute_s", n.compute_s},
                                                   {"comm_s", n.comm_s},
                                                   {"wait_s", n.wait_s},
                                                   {"data_s", n.data_s},
                                                   {"optimizer_s", n.optimizer_s},
                                                   {"samples_per_s", n.samples_per_s},
                                                   {"cpu_util_machine", n.cpu_util_machine},
                                                   {"gpu_util", n.gpu_util},
                                                   {"gpu_mem_used_bytes", n.gpu_mem_used_bytes},
                                                   {"gpu_mem_total_bytes", n.gpu_mem_total_bytes},
                                                   {"mem_rss_bytes", n.mem_rss_bytes},
                                                   {"mem_available_bytes", n.mem_available_bytes},
                                                   {"net_tx_bytes_per_s", n.net_tx_bytes_per_s},
                                                   {"net_rx_bytes_per_s", n.net_rx_bytes_per_s},
                                                   {"net_retransmits_per_s", n.net_retransmits_per_s},
                                                   {"net_srtt_us", n.net_srtt_us}};
  for (const auto& [name, v] : fields) {
    if (!std::isfinite(v)) return name;
  }
  return nullptr;
}

const char* first_non_finite(const GlobalStats& g) {
  const std::pair<const char*, double> fields[] = {{"progress", g.progress},
                                                   {"loss_trend", g.loss_trend},
                                                   {"grad_sq_norm", g.grad_sq_norm},
                                                   {"grad_norm_variance", g.grad_norm_variance},
                                                   {"noise_scale", g.noise_scale},
                                                   {"step_time_spread", g.step_time_spread},
                                                   {"loss", g.loss}};
  for (const auto& [name, v] : fields) {
    if (!std::isfinite(v)) return name;
  }
  return nullptr;
}

double rank_upper(const ClusterState& s, size_t i) {
  const double unbounded = std::numeric_limits<int32_t>::max();
  double m = unbounded;
  if (s.bounds.max.size() == 1 || s.bounds.max.size() == s.nodes.size()) m = rank_max(s.bounds, i);
  if (m <= 0 || m >= unbounded) m = s.nodes[i].batch_max;
  return m > 0 ? m : 0;
}

double log_ratio(double num, double den, double bound) {
  if (!(num > 0) || !(den > 0)) return 0;
  return clamp(std::log(num / den), -bound, bound);
}

// Time of one step as rank i saw it (its parts), clamped against garbage.
double step_of(const NodeRecord& r) {
  return clamp(r.data_s, 0, 1e9) + clamp(r.compute_s, 0, 1e9) + clamp(r.wait_s, 0, 1e9) +
         clamp(r.comm_s, 0, 1e9) + clamp(r.optimizer_s, 0, 1e9);
}

double memory_headroom(const NodeRecord& r) {
  if (r.gpu_mem_total_bytes > 0) return clamp(1 - r.gpu_mem_used_bytes / r.gpu_mem_total_bytes, 0, 1);
  if (r.mem_available_bytes > 0) {
    return clamp(r.mem_available_bytes / (r.mem_available_bytes + std::max(0.0, r.mem_rss_bytes)), 0, 1);
  }
  return 0;
}

// A run's first window: each rank's model rests on one window's mean, which has no residual yet
// to tell noise from speed. A rank's balanced move is held unless it clears z relative standard
// errors, z = extremes_z(n) (the largest of n ranks' deviations is judged, as StartCheck judges
// the start), the standard error its own or the cluster's median, whichever is larger: a rank
// whose own steps happen to scatter little is not believed more than the others. Ranks sharing
// cores trade the free core for many steps at a time: on a real 4-rank homogeneous run one rank
// ran 1.7x faster than the others for a whole first window, moved 32 -> 41 under a bar of two of
// its own standard errors, and was the slow one in the next (docs/AGENT.md, item 18). Later
// windows need no such rule: the models average over their history, and a change (a restart)
// must be followed at once (a rule on the models' residuals held ranks back after changes: 1 %
// slower on a moving wave). The fast proposal is left as it is: the policy decides when a single
// window is worth reacting to.
void hold_first_window_noise(const RankTimeModels& models, const ClusterState& s,
                             std::vector<double>& proposal) {
  const size_t n = proposal.size();
  auto first_window = [&](size_t i) {
    const RankTimeModels::Reading& r = models.readings()[i];
    return r.observations <= 1 && !r.restarted;
  };
  bool any = false;
  for (size_t i = 0; i < n && !any; ++i) any = first_window(i);
  if (!any) return;  // past the first window: no median of n to take at every decision
  std::vector<double> rel_se(n);
  for (size_t i = 0; i < n; ++i) rel_se[i] = s.nodes[i].compute_rel_se;
  const double pooled = median(rel_se), z = extremes_z(n);
  for (size_t i = 0; i < n; ++i) {
    if (!first_window(i)) continue;
    const double b = std::max(1, s.nodes[i].batch_size);
    if (std::fabs(std::log(proposal[i] / b)) < z * std::max(rel_se[i], pooled)) proposal[i] = b;
  }
}

// sum(w^2) / sum(w)^2 over a rank's kept windows (forgetting weights): one window's variance
// times this is the variance of their weighted mean.
double forgetting_share(const RankTimeModels& models, size_t i) {
  double sw = 0, sww = 0, w = 1;
  for (int32_t k = 0; k < models.readings()[i].observations; ++k, w *= models.forget()) sw += w, sww += w * w;
  return sw > 0 ? sww / (sw * sw) : 1;
}

// Relative variance of rank i's fitted level t_i(b_i): the model's residual over its effective
// number of windows (forgetting weights), or, with one window, that window's own standard error.
double level_variance(const RankTimeModels& models, const NodeRecord& r, size_t i) {
  const RankTimeModels::Reading& rd = models.readings()[i];
  if (rd.observations < 2) return r.compute_rel_se * r.compute_rel_se;
  return rd.residual * rd.residual * forgetting_share(models, i);
}

// The same from the rank's step-to-step noise alone (a window's mean of its steps): a change of
// speed between windows, which the residual counts as misfit, does not enter it.
double level_variance_of_steps(const RankTimeModels& models, const NodeRecord& r, size_t i) {
  const double noise = models.readings()[i].step_noise;
  return noise * noise / std::max(1, r.steps) * forgetting_share(models, i);
}

// Noise between ranks of equal speed is not a difference of speed. A rank's per-sample time
// log(t_i(b_i)/b_i) within kSameSpeed standard errors of the cluster's median is pulled toward it
// by the share of those ranks' spread that noise explains (James-Stein), by at most one standard
// error of its own (Efron-Morris limited translation): a homogeneous noisy cluster keeps its even
// split, while a rank that really differs by more than its noise, a rank whose model restarted,
// and clusters under 4 ranks (too few to tell spread from noise) are left as they are.
constexpr double kSameSpeed = 3.0;

void shrink_noise_toward_cluster(const ClusterState& s, const RankTimeModels& models,
                                 std::vector<double>& scale) {
  const size_t n = scale.size();
  if (n < 4) return;
  std::vector<double> u(n), v(n);
  for (size_t i = 0; i < n; ++i) {
    const NodeRecord& r = s.nodes[i];
    const double b = std::max(1, r.batch_size);
    u[i] = std::log(scale[i] * models.models()[i].at(b) / b);
    v[i] = level_variance(models, r, i);
  }
  const double center = median(u);
  std::vector<size_t> same;
  double spread = 0, noise = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = u[i] - center;
    if (models.readings()[i].restarted || !(d * d <= kSameSpeed * kSameSpeed * v[i])) continue;
    same.push_back(i);
    spread += d * d, noise += v[i];
  }
  if (same.size() < 4 || !(spread > 0) || !std::isfinite(noise)) return;
  const double noise_share = std::min(1.0, noise / spread);
  for (size_t i : same) {
    const double limit = std::sqrt(v[i]);
    scale[i] *= std::exp(-clamp(noise_share * (u[i] - center), -limit, limit));
  }
}

// A homogeneous cluster keeps its plan. The balanced plan's predicted gain log(T(b)/T(slow)), T
// the slowest rank's fitted time, is positive on noise alone (the slowest of n noisy levels lies
// above their mean): with 20 % step noise, 8 equal ranks changed their plan in 148 of 524 windows
// (by up to 2 of 32, at no gain). The bar: z standard errors of a rank's fitted level from its
// step-to-step noise, z = extremes_z(n) = 1 + sqrt(2 ln n) (as in StartCheck). Where no
// rank's fitted time for the mean batch B/n lies more than kApart bars from the cluster's median,
// the slow proposal keeps the plan in force unless the gain clears one bar. kApart = 1 let the
// tails of equal ranks' levels through (20 plan changes at 20 % noise); without the test, ranks
// clearly apart were held too and slow drifts lagged (dynamic_drift up to 0.8 % slower). Under
// tracking the forecast is the fast proposal's (`last_window_forecast`) and the noise
// persistence's own forecast error: speeds that wander within it (ranks sharing cores) are not
// chased (68 -> 29 plan changes at equal throughput in the wandering test). Changes (restarted
// models), the first windows and a global batch that moves are left to the rules above.
// docs/AGENT.md, items 12 to 14.
constexpr double kApart = 2;

// Classes of ranks each within the bar of the median can still differ: 129 of 197 ranks at 0.92x
// the others' speed under 20-25 % step noise were held at the even split for 1440 of 1559 steps
// (random suite seed 12, static_r062: 1.017x gns's time). Their levels' squared deviations from
// the mean, in the noise's variance, sum past the chi-square bar of n - 1 degrees of freedom at
// the same z; noise alone stays under it.
bool levels_spread_beyond_noise(const std::vector<double>& level, double noise_var, double z) {
  const size_t n = level.size();
  if (n < 2 || !(noise_var > 0)) return false;
  double mean = 0;
  for (double l : level) mean += l / double(n);
  double squares = 0;
  for (double l : level) squares += (l - mean) * (l - mean);
  return squares / noise_var > chi_square_bar(n - 1, z);
}

// Every level within `half_width` of their median (NaN levels are not).
bool levels_near_median(const std::vector<double>& level, double half_width) {
  const double center = median(level);
  return std::all_of(level.begin(), level.end(),
                     [&](double l) { return std::fabs(l - center) <= half_width; });
}

// Under tracking the hold reads the last windows' levels against persistence's forecast error,
// which drifting ranks inflate: three ranks 2-3x apart in a slow, deep drift (5-step windows at
// 24 % step noise) passed for equal and were held, 2.4 % behind proportional (random suite 30,
// dynamic_r047). The levels fitted over the ranks' histories must agree as well, within kApart
// bars of their step noise and kWander: speeds that wander for windows at a time average out there,
// a drift that lasts does not (docs/AGENT.md item 30).
constexpr double kWander = 0.18;  // 1.2x, as RankTimeModels' level shifts allow ranks sharing cores

bool fitted_levels_agree(const ClusterState& s, const RankTimeModels& models, double global_batch, double z) {
  const size_t n = s.nodes.size();
  std::vector<double> level(n), variance(n);
  for (size_t i = 0; i < n; ++i) {
    level[i] = std::log(models.models()[i].at(global_batch / double(n)));
    variance[i] = level_variance_of_steps(models, s.nodes[i], i);
  }
  return levels_near_median(level, kApart * z * std::sqrt(median(variance)) + kWander);
}

// True where the ranks are held as equal (above); `steady_apart` says whether the steady levels
// alone kept them from it (item 34), for the decision's note.
bool hold_homogeneous_plan(const ClusterState& s, const RankTimeModels& models, double global_batch,
                           const std::vector<RankTimeModels::Model>& forecast,
                           const std::vector<double>& noise, const SteadyLevels* steady,
                           std::vector<double>& proposal, bool& steady_apart) {
  const size_t n = proposal.size();
  const bool tracking = models.tracking();
  const double persistence_rms = models.persistence_rms();
  const double persistence_var = persistence_rms * persistence_rms;
  std::vector<double> level(n), variance(n), now(n), then(n);
  double b_now = 0;
  for (size_t i = 0; i < n; ++i) {
    const RankTimeModels::Reading& rd = models.readings()[i];
    if (rd.restarted || rd.observations < 2) return false;
    // The forecast the proposal followed: the models, or under tracking the last window's level.
    const RankTimeModels::Model& m = tracking ? forecast[i] : models.models()[i];
    const double b = std::max(1, s.nodes[i].batch_size);
    level[i] = std::log(m.at(global_batch / double(n)));
    variance[i] = tracking ? persistence_var : level_variance_of_steps(models, s.nodes[i], i);
    now[i] = m.at(b), then[i] = m.at(proposal[i]);
    b_now += b;
  }
  if (std::fabs(b_now - global_batch) > 0.5) return false;
  const double z = extremes_z(n), noise_var = median(variance);
  const double bar = z * std::sqrt(noise_var);
  if (!levels_near_median(level, kApart * bar)) return false;
  if (levels_spread_beyond_noise(level, noise_var, kApart * z)) return false;
  if (tracking && !fitted_levels_agree(s, models, global_batch, z)) return false;
  // Ranks a little apart under heavy noise pass the tests above by the few windows the models
  // keep; every window since their last change can still tell them apart (agent/steady_levels.h).
  steady_apart = steady && steady->apart();
  if (steady_apart) return false;
  // Judged after the tests above: under weighed noise each judgement is an E[max] over the ranks.
  const double t_now = judged_step_time(now, noise), t_new = judged_step_time(then, noise);
  if (t_new > 0 && t_now > 0 && std::log(t_now / t_new) < bar) {
    for (size_t i = 0; i < n; ++i) proposal[i] = std::max(1, s.nodes[i].batch_size);
  }
  return true;
}

// How much of a rank's last-window surprise the tracking forecast takes: all of it where the
// surprise stands clear of the window mean's noise, none where noise explains it (positive-part
// James-Stein on the log scale). Under tracking, ranks whose speeds held still took their last
// window's noise for a change of speed, every window, wherever other ranks drifted.
double persistence_weight(double surprise, const RankTimeModels::Reading& reading, int32_t steps) {
  if (!(reading.step_noise > 0) || steps < 1) return 1;
  const double noise_var = reading.step_noise * reading.step_noise / steps, l = std::log(surprise);
  return l * l > noise_var ? 1 - noise_var / (l * l) : 0;
}

// The fast proposal's forecast of the next window: each rank's model rescaled to its last window.
// A restarted model already rests on the window's newest steps (restart_at_recent): the window's
// mean, half before the change, would pull it back toward the old speed. Under drifting speeds
// (tracking) the forecast is each rank's rate at its batch in force, t_i(b) = b·t_i(b_i)/b_i: the
// plan follows the speeds, so a rank's batch and its speed move together and the affine fit reads
// the slowdown as a fixed cost (fitted alpha/beta of 0 to 30000 samples on dynamic_drift, whose
// truth is 10), which sent the balanced split to its bounds. docs/AGENT.md, item 14.
std::vector<RankTimeModels::Model> last_window_forecast(const ClusterState& s, const RankTimeModels& models) {
  std::vector<RankTimeModels::Model> forecast = models.models();
  const bool tracking = models.tracking();
  for (size_t i = 0; i < forecast.size(); ++i) {
    const NodeRecord& r = s.nodes[i];
    RankTimeModels::Model& m = forecast[i];
    const double b = std::max(1, r.batch_size), predicted = m.at(b);
    double scale = 1;
    if (r.compute_s > 0 && predicted > 0 && !models.readings()[i].restarted)
      scale = clamp(r.compute_s / predicted, 0.05, 20);
    if (tracking) {
      m.beta = std::pow(scale, persistence_weight(scale, models.readings()[i], r.steps)) * predicted / b;
      m.alpha = 0;
    } else {
      m.alpha *= scale;
      m.beta *= scale;
    }
  }
  return forecast;
}

}  // namespace

BalanceView balance_view(const ClusterState& s, const RankTimeModels& models, double global_batch,
                         const RuleSet& rules, const SteadyLevels* steady) {
  const size_t n = s.nodes.size();
  BalanceView v;
  v.global_batch = global_batch;
  v.slow.resize(n);
  for (size_t i = 0; i < n; ++i) v.slow[i] = std::max(1, s.nodes[i].batch_size);
  v.fast = v.proportional = v.slow;
  v.ready = models.ready() && models.models().size() == n && global_batch > 0;
  if (!v.ready) return v;
  std::vector<double> lo, hi;
  rank_bounds(s.bounds, n, lo, hi);
  std::vector<double> same_speed(n, 1.0);
  shrink_noise_toward_cluster(s, models, same_speed);
  // Ranks whose steps scatter more than the others' carry a little less (agent/noise_split.h).
  const std::vector<double> noisy =
      rules.on(Rule::kNoiseSplit) ? noise_split_scale(models, global_batch, lo, hi, &same_speed, {}, &v.noise)
                                  : std::vector<double>(n, 1.0);
  std::vector<double> slow_scale(n);
  for (size_t i = 0; i < n; ++i) slow_scale[i] = same_speed[i] * noisy[i];
  models.split(global_batch, lo, hi, v.slow, &slow_scale);
  for (size_t i = 0; i < n; ++i) {  // the mean time of the slowest rank, the noise factor left out
    v.predicted_compute_s = std::max(v.predicted_compute_s, same_speed[i] * models.models()[i].at(v.slow[i]));
  }
  v.forecast = last_window_forecast(s, models);
  const std::vector<RankTimeModels::Model>& forecast = v.forecast;
  double rate_sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const NodeRecord& r = s.nodes[i];
    v.proportional[i] = r.compute_s > 0 ? r.batch_size / r.compute_s : 0;
    rate_sum += v.proportional[i];
  }
  split_batch(forecast, global_batch, lo, hi, v.fast, &noisy);
  // Drifting speeds: the last window predicts the next better than the models' history does, so
  // the balanced move follows it (as the fast proposal does).
  if (models.tracking() && rules.on(Rule::kTracking)) v.slow = v.fast;
  if (rules.on(Rule::kHomogeneousHold)) {
    hold_first_window_noise(models, s, v.slow);
    bool steady_apart = false;
    const bool equal =
        hold_homogeneous_plan(s, models, global_batch, forecast, v.noise, steady, v.slow, steady_apart);
    if (steady_apart) v.note = "ranks apart by their levels since their last change: not held as equal";
    // Under tracking the hold's bar is persistence's error, which spells and drifts inflate.
    v.equal_ranks = equal && !models.tracking();
  }
  // Interference that keeps coming back: hold its slow phase's plan where following each phase
  // costs more (agent/recurring_slowdown.h).
  RecurringHedge hedge;
  if (rules.on(Rule::kRecurringHold))
    hedge = hedge_recurring(s, models, global_batch, lo, hi, ChangeAlarm::latency_steps());
  if (hedge.hold) {
    v.equal_ranks = false;  // the slow phase's plan is uneven for a reason the levels need not show
    v.recurring_hold = true;
    v.slow = v.fast = std::move(hedge.plan);
    v.note = "recurring slowdown: the slow phase's plan held (" + std::to_string(hedge.hold_cost) +
             " s per cycle against " + std::to_string(hedge.follow_cost) + " s following it)";
  }
  for (size_t i = 0; i < n; ++i) {
    v.proportional[i] = rate_sum > 0 ? std::max(1.0, global_batch * v.proportional[i] / rate_sum) : v.slow[i];
  }
  return v;
}

EncodedState encode_state(const ClusterState& s, const RankTimeModels& models, const BalanceView& view) {
  EncodedState e;
  const size_t n = s.nodes.size();
  e.ranks = static_cast<int64_t>(n);
  e.node.assign(n * kNodeFeatures, 0.f);
  e.global.assign(kGlobalFeatures, 0.f);
  for (size_t i = 0; i < n; ++i) {
    if (const char* f = first_non_finite(s.nodes[i])) {
      e.finite = false;
      e.problem = "rank " + std::to_string(i) + " " + f + " is not finite";
      return e;
    }
  }
  if (const char* f = first_non_finite(s.global)) {
    e.finite = false;
    e.problem = std::string("global ") + f + " is not finite";
    return e;
  }
  if (n == 0) return e;
  DYNAMIX_CHECK(view.slow.size() == n, "encode_state: balance view has the wrong number of ranks");

  double mean_compute = 0, mean_bytes = 0, mean_srtt = 0, mean_step = 0, mean_comm = 0;
  for (const NodeRecord& r : s.nodes) {
    mean_compute += clamp(r.compute_s, 0, 1e9) / n;
    mean_bytes += clamp(r.net_tx_bytes_per_s + r.net_rx_bytes_per_s, 0, 1e30) / n;
    mean_srtt += clamp(r.net_srtt_us, 0, 1e12) / n;
    mean_step += step_of(r) / n;
    mean_comm += clamp(r.comm_s, 0, 1e9) / n;
  }
  const bool have_models = models.models().size() == n && models.readings().size() == n;
  double residual_sum = 0, restarted = 0;
  for (size_t i = 0; i < n; ++i) {
    const NodeRecord& r = s.nodes[i];
    float* f = &e.node[i * kNodeFeatures];
    const double b = std::max(1, r.batch_size), step = step_of(r);
    f[kSlowMove] = log_ratio(view.slow[i], b, 3);
    f[kFastMove] = log_ratio(view.fast[i], b, 3);
    f[kPropMove] = log_ratio(view.proportional[i], b, 3);
    f[kComputeRatio] = log_ratio(r.compute_s, mean_compute, 3);
    f[kWaitFraction] = step > 0 ? clamp(r.wait_s / step, 0, 1) : 0;
    if (have_models) {
      const RankTimeModels::Reading& rd = models.readings()[i];
      const RankTimeModels::Model& m = models.models()[i];
      f[kResidual] = clamp(rd.residual, 0, 1);
      f[kSurprise] = log_ratio(rd.surprise, 1, 2);
      f[kRestarted] = rd.restarted ? 1 : 0;
      f[kHistoryFill] = clamp(double(rd.observations) / models.history(), 0, 1);
      f[kFixedShare] = m.valid ? clamp(m.alpha / m.at(b), 0, 1) : 0;
      residual_sum += f[kResidual];
      restarted += f[kRestarted];
    }
    const double bmax = rank_upper(s, i);
    f[kBatchFill] = bmax > 0 ? clamp(r.batch_size / bmax, 0, 1) : 0;
    f[kMemHeadroom] = memory_headroom(r);
    f[kOom] = r.oom_events > 0 ? 1 : 0;
    f[kCpuUtil] = clamp(r.cpu_util_machine, 0, 1);
    f[kGpuUtil] = clamp(r.gpu_util > 1.5 ? r.gpu_util / 100 : r.gpu_util, 0, 1);  // fraction or percent
    f[kNetBytes] = log_ratio(r.net_tx_bytes_per_s + r.net_rx_bytes_per_s, mean_bytes, 3);
    f[kRetransPerStep] = std::log1p(clamp(r.net_retransmits_per_s * step, 0, 1e6));
    f[kSrttRatio] = log_ratio(r.net_srtt_us, mean_srtt, 3);
  }
  const GlobalStats& g = s.global;
  const double batch = view.global_batch;
  e.global[kCommShare] = mean_step > 0 ? clamp(mean_comm / mean_step, 0, 1) : 0;
  e.global[kSpread] = std::log(clamp(g.step_time_spread, 1, 1e6));
  e.global[kIdealGap] =
      view.predicted_compute_s > 0 ? log_ratio(mean_step, view.predicted_compute_s + mean_comm, 3) : 0;
  e.global[kMeanResidual] = residual_sum / n;
  e.global[kRestartedShare] = restarted / n;
  e.global[kClusterSize] = std::log2(double(n)) / 10;
  e.global[kNoiseRatio] = batch > 0 ? safe_log1p(g.noise_scale / batch) : 0;
  e.global[kLossTrend] = clamp(g.loss_trend, -10, 10);
  e.global[kGradVariance] = g.grad_sq_norm > 0 ? safe_log1p(g.grad_norm_variance / g.grad_sq_norm) : 0;
  e.global[kProgress] = clamp(g.progress, 0, 1);
  return e;
}

RunningNorm::RunningNorm(int64_t dims) : mean_(dims, 0.0), var_(dims, 1.0) {}

void RunningNorm::set(std::vector<double> mean, std::vector<double> var, double count) {
  DYNAMIX_CHECK(mean.size() == var.size() && count > 0, "RunningNorm::set: inconsistent statistics");
  mean_ = std::move(mean);
  var_ = std::move(var);
  count_ = count;
}

void RunningNorm::update(const std::vector<float>& x, int64_t rows) {
  const int64_t d = dims();
  if (rows <= 0) return;
  DYNAMIX_CHECK(static_cast<int64_t>(x.size()) == rows * d, "RunningNorm::update: size mismatch");
  for (int64_t j = 0; j < d; ++j) {
    double bm = 0, bv = 0;
    for (int64_t r = 0; r < rows; ++r) bm += x[r * d + j];
    bm /= rows;
    for (int64_t r = 0; r < rows; ++r) bv += (x[r * d + j] - bm) * (x[r * d + j] - bm);
    bv /= rows;  // population variance of the batch
    // Combine (mean_, var_, count_) with (bm, bv, rows).
    double total = count_ + rows, delta = bm - mean_[j];
    double m2 = var_[j] * count_ + bv * rows + delta * delta * count_ * rows / total;
    mean_[j] += delta * rows / total;
    var_[j] = m2 / total;
  }
  count_ += rows;
}

std::vector<float> RunningNorm::normalize(const std::vector<float>& x, int64_t rows, double clip) const {
  const int64_t d = dims();
  DYNAMIX_CHECK(static_cast<int64_t>(x.size()) == rows * d, "RunningNorm::normalize: size mismatch");
  std::vector<float> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < d; ++j) {
      double z = (x[r * d + j] - mean_[j]) / std::sqrt(var_[j] + 1e-8);
      out[r * d + j] = static_cast<float>(clamp(z, -clip, clip));
    }
  }
  return out;
}

}  // namespace dynamix
