// DYNAMIX — slowdowns too short to follow: spells measured step by step, and the hold through one.
#include "agent/short_spells.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <utility>

#include "agent/cluster_state.h"
#include "agent/noise_split.h"
#include "framework/core/stats.h"
#include "framework/core/strings.h"

namespace dynamix {
namespace {

std::string rank_list(const std::vector<size_t>& ranks) {
  std::string s;
  for (size_t r : ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
  return s;
}

}  // namespace

void SpellWatch::reset() {
  reference_.clear();
  scale_.clear();
  threshold_.clear();
  calibrating_.clear();
  calibration_.clear();
  batch_.clear();
  miss_.clear();
  run_start_.clear();
  run_steps_.clear();
  disturbed_.clear();
  ended_.clear();
  start_times_.clear();
  start_ended_.clear();
  start_level_.clear();
  start_spells_changed_ = false;
  steps_ = 0;
  startup_left_ = 0;
}

void SpellWatch::size_to(size_t n) {
  reference_.assign(n, {});
  scale_.assign(n, 1.0);
  threshold_.assign(n, options_.factor);
  calibrating_.assign(n, false);
  calibration_.assign(n, {});
  run_start_.assign(n, 0);
  run_steps_.assign(n, 0);
  batch_.assign(n, 0);  // unknown: the next arm() calibrates its plan afresh
  // Infinite: no step is slow before a calibration (a flat start reference's 1 has no unit yet).
  miss_.assign(n, std::numeric_limits<double>::infinity());
}

void SpellWatch::arm_start(size_t n) {
  size_to(n);
  RankTimeModels::Model flat;  // the same time at any batch: the first decision keeps the batches
  flat.alpha = 1;
  flat.valid = true;
  reference_.assign(n, flat);
  disturbed_.assign(n, 0);
  start_times_.assign(n, {});
  start_ended_.assign(n, {});
  start_level_.assign(n, std::numeric_limits<double>::infinity());
  startup_left_ = kStartupSteps;
}

bool SpellWatch::starting(size_t i) const {
  return i < start_times_.size() && batch_[i] == 0 && start_times_[i].size() < kStartSteps;
}

void SpellWatch::observe_start(size_t i, double t) {
  if (start_times_[i].empty()) start_step_ = steps_;
  start_times_[i].push_back(t);
  const std::vector<double>& times = start_times_[i];
  const size_t k = size_t(options_.min_steps);
  if (times.size() < k) return;  // no step is slow before a reference
  // The rank's level: the least median of min_steps steps in a row, so that a spell begun in the
  // first steps is not its speed. Where it falls (a few times a run: record lows), every start step
  // is judged again; otherwise the new one is judged as observe() judges later ones.
  newest_.assign(times.end() - std::ptrdiff_t(k), times.end());  // kept: no allocation per step
  if (std::all_of(newest_.begin(), newest_.end(), [](double x) { return std::isfinite(x); })) {
    const double m = median_in_place(newest_);
    if (m < start_level_[i]) {
      start_level_[i] = m;
      rejudge_start(i);
      return;
    }
  }
  if (std::isfinite(start_level_[i])) judge_start_step(i, times.size() - 1);
}

void SpellWatch::rejudge_start(size_t i) {
  // The reference: the median of the steps within the threshold of the level.
  std::vector<double> calm;
  for (double x : start_times_[i]) {
    if (x <= threshold_[i] * start_level_[i]) calm.push_back(x);  // false for an unusable step (NaN)
  }
  reference_[i].alpha = median(calm);
  run_steps_[i] = 0;
  disturbed_[i] = 0;
  start_spells_changed_ |= !start_ended_[i].empty();
  start_ended_[i].clear();
  for (size_t j = 0; j < start_times_[i].size(); ++j) judge_start_step(i, j);
}

void SpellWatch::judge_start_step(size_t i, size_t j) {
  const double t = start_times_[i][j];
  if (!std::isfinite(t)) return;  // an unusable step, as observe() skips it
  const int64_t step = start_step_ + int64_t(j);
  if (const int32_t length = count_step(i, t > threshold_[i] * reference_[i].alpha, step)) {
    start_ended_[i].push_back({step, length});
    start_spells_changed_ = true;
  }
}

int32_t SpellWatch::count_step(size_t i, bool slow, int64_t step) {
  if (slow) {
    // A slow step after a spell ended: it is not over (a noisy rank's slowdown breaks into runs).
    if (run_steps_[i]++ == 0) run_start_[i] = step, disturbed_[i] &= uint8_t(~RankTimeModels::kSpellEnded);
    if (run_steps_[i] == options_.min_steps)
      disturbed_[i] |= RankTimeModels::kSpellSeen | RankTimeModels::kSpellBegan;
    return 0;
  }
  const int32_t length = run_steps_[i] >= options_.min_steps ? run_steps_[i] : 0;
  if (length > 0) disturbed_[i] |= RankTimeModels::kSpellSeen | RankTimeModels::kSpellEnded;
  run_steps_[i] = 0;
  return length;
}

void SpellWatch::gather_start_spells() {
  std::vector<std::pair<int64_t, int64_t>> all;  // (end step, length), newest first
  for (const auto& rank : start_ended_) all.insert(all.end(), rank.begin(), rank.end());
  std::sort(all.begin(), all.end(), std::greater<>());
  ended_.clear();
  for (size_t j = 0; j < all.size() && j < options_.newest; ++j) ended_.push_back(all[j].second);
}

void SpellWatch::arm(const RankTimeModels& models, const std::vector<int32_t>& plan) {
  const size_t n = plan.size();
  if (models.models().size() != n) return;
  if (reference_.size() != n) size_to(n);
  disturbed_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    // A start reference (arm_start) ends at the first decision, with the spell it measured: a
    // slowdown begun in the first window and lasting, broken into runs by noise, kept the rank's
    // later windows flagged, unfitted, and the plan held.
    if (batch_[i] == 0) run_steps_[i] = 0;
    if (run_steps_[i] > 0) {  // in a run: its reference stays, at the new batch
      batch_[i] = plan[i];
      continue;
    }
    const bool slowed = models.in_slowdown(i) && reference_[i].valid;
    if (!slowed) reference_[i] = models.models()[i], scale_[i] = 1.0;
    // Slower than the rank's own step noise explains, too: a noisy rank's 2x steps are its noise.
    const double noise = models.readings().size() == n ? models.readings()[i].step_noise : 0;
    threshold_[i] = std::max(options_.factor, std::exp(kNoiseZ * noise));
    // At a new batch the reference is calibrated on the rank's first steps there: a model fitted
    // at other batches can miss by its fixed cost (3.5x for a rank moved from 32 to 3 samples,
    // a spell that never ended).
    if (plan[i] != batch_[i]) {
      calibrating_[i] = true;
      calibration_[i].clear();
      miss_[i] = batch_[i] > 0 ? std::max(plan[i], batch_[i]) / double(std::min(plan[i], batch_[i]))
                               : std::numeric_limits<double>::infinity();
    }
    batch_[i] = plan[i];
  }
  start_times_.clear();  // the start references have ended
  start_ended_.clear();
  start_level_.clear();
}

void SpellWatch::observe(const std::vector<double>& compute_s) {
  if (batch_.empty() && steps_ == 0) arm_start(compute_s.size());
  const size_t n = batch_.size();
  if (compute_s.size() != n) return;
  if (startup_left_ > 0) {
    --startup_left_;
    ++steps_;
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    if (starting(i)) {
      observe_start(i, compute_s[i] > 0 && std::isfinite(compute_s[i]) ? compute_s[i] : std::nan(""));
      continue;
    }
    const double expected = reference_[i].valid ? reference_[i].at(batch_[i]) : 0;
    if (!(expected > 0) || !std::isfinite(compute_s[i])) continue;
    const double ratio = compute_s[i] / expected;
    // While calibrating at a new batch, a step is slow only beyond what the model can miss by there
    // (a spell begun right after a plan change: its steps calibrated the reference, and hid it).
    const bool slow = ratio > threshold_[i] * scale_[i] * (calibrating_[i] ? miss_[i] : 1.0);
    if (const int32_t length = count_step(i, slow, steps_)) {
      ended_.push_front(length);
      if (ended_.size() > options_.newest) ended_.pop_back();
    }
    if (!slow && calibrating_[i]) calibrate(i, ratio);
  }
  if (std::exchange(start_spells_changed_, false)) gather_start_spells();  // every spell ended so far
  ++steps_;
}

void SpellWatch::calibrate(size_t i, double ratio) {
  calibration_[i].push_back(ratio);
  if (calibration_[i].size() >= size_t(options_.min_steps)) {
    scale_[i] = median(calibration_[i]);  // a plan change's slow first step does not move it
    calibrating_[i] = false;
  }
}

std::vector<SpellWatch::Open> SpellWatch::open() const {
  std::vector<Open> o;
  for (size_t i = 0; i < run_steps_.size(); ++i) {
    if (run_steps_[i] >= options_.min_steps) o.push_back({i, run_start_[i]});
  }
  return o;
}

bool SpellWatch::spell_open() const {
  return std::any_of(run_steps_.begin(), run_steps_.end(),
                     [&](int32_t k) { return k >= options_.min_steps; });
}

SpellOutlook spell_outlook(const std::vector<int64_t>& lengths, int64_t elapsed) {
  SpellOutlook o;
  double left = 0;
  for (int64_t len : lengths) {
    if (len <= elapsed) continue;
    ++o.spells;
    left += double(len - elapsed);
  }
  o.remaining_steps = o.spells > 0 ? left / o.spells : 0;
  return o;
}

void ShortSpells::reset() {
  held_.clear();
  recheck_at_ = -1;
}

bool ShortSpells::recheck_due(const SpellWatch& watch) {
  if (recheck_at_ < 0 || watch.steps() < recheck_at_) return false;
  recheck_at_ = -1;
  for (const SpellWatch::Open& o : watch.open()) {
    if (std::find(held_.begin(), held_.end(), o.rank) != held_.end()) return true;
  }
  return false;
}

ShortSpells::Verdict ShortSpells::judge(const SpellWatch& watch,
                                        const std::vector<RankTimeModels::Model>& forecast,
                                        const std::vector<double>& noise, const std::vector<int32_t>& current,
                                        const std::vector<int32_t>& next, double switch_cost,
                                        double latency) {
  Verdict v;
  const size_t n = current.size();
  const std::vector<SpellWatch::Open> open = watch.open();
  const bool held_open = std::any_of(open.begin(), open.end(), [&](const SpellWatch::Open& o) {
    return std::find(held_.begin(), held_.end(), o.rank) != held_.end();
  });
  if (!held_.empty() && !held_open) {
    v.ended = held_;
    reset();
  }
  if (open.empty() || forecast.size() != n || next.size() != n || next == current) return v;
  // A move that takes no batch off a rank in a spell does not follow it (other ranks' return from
  // a slowdown, while two noisy ranks at the least batch were in a spell: held for 90 steps, 3 %
  // slower; docs/AGENT.md item 26).
  if (std::none_of(open.begin(), open.end(),
                   [&](const SpellWatch::Open& o) { return next[o.rank] < current[o.rank]; }))
    return v;
  const auto sum = [](const std::vector<int32_t>& b) { return std::accumulate(b.begin(), b.end(), 0LL); };
  int64_t since = 0;
  for (const SpellWatch::Open& o : open) since = std::max(since, o.since);
  const std::vector<int64_t> lengths = watch.lengths();
  const SpellOutlook outlook = spell_outlook(lengths, watch.steps() - since);
  // The global batch moves (the plan must follow it), too few spells known, or this one has
  // outlasted them all: followed as any change.
  if (sum(next) != sum(current) || int32_t(lengths.size()) < kMinSpells || outlook.spells == 0) {
    reset();
    return v;
  }
  // Following gains over the steps the spell has left, at the speeds now; it costs a plan change
  // there and back, and the followed plan at the speeds before the spell until its end is answered.
  std::vector<RankTimeModels::Model> before = forecast;
  std::vector<size_t> ranks;
  for (const SpellWatch::Open& o : open) {
    if (!watch.reference(o.rank).valid) {
      reset();
      return v;
    }
    before[o.rank] = watch.reference(o.rank);
    ranks.push_back(o.rank);
  }
  const double t_now = judged_step_time(forecast, current, noise),
               t_next = judged_step_time(forecast, next, noise);
  const double t_was = judged_step_time(before, current, noise),
               t_was_next = judged_step_time(before, next, noise);
  if (!(t_now > 0) || !(t_was > 0) || !std::isfinite(t_next) || !std::isfinite(t_was_next)) {
    reset();
    return v;
  }
  const double gain = outlook.remaining_steps * (t_now - t_next) / t_now;
  const double cost = latency * std::max(0.0, (t_was_next - t_was) / t_was) + 2 * switch_cost;
  if (gain >= cost) {
    reset();
    return v;
  }
  held_ = ranks;
  recheck_at_ = watch.steps() + static_cast<int64_t>(std::ceil(outlook.remaining_steps)) + 1;
  v.hold = true;
  v.note = "slowdown of rank " + rank_list(held_) + " expected to end in " +
           format_number("%.1f", outlook.remaining_steps) + " steps (" + std::to_string(outlook.spells) +
           " of " + std::to_string(lengths.size()) + " spells lasted as long): following gains " +
           format_number("%.2f", gain) + " steps and costs " + format_number("%.2f", cost) + ": plan kept";
  return v;
}

}  // namespace dynamix
