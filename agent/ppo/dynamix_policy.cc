// DYNAMIX — DynamixPolicy: encode -> reward -> store -> act -> project; PPO on a worker thread.
#include "agent/ppo/dynamix_policy.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <ostream>
#include <utility>

#include "agent/noise_split.h"
#include "agent/plan_projection.h"
#include "agent/ppo/actor_critic.h"
#include "agent/ppo/feature_groups.h"
#include "agent/ppo/moves.h"
#include "agent/ppo/ppo_learner.h"
#include "framework/core/error.h"
#include "framework/core/strings.h"

namespace dynamix {
namespace {

// b_i in force, clamped into the bounds (monitoring can report 0 or garbage).
std::vector<int32_t> sanitized_current(const ClusterState& s) {
  const size_t n = s.nodes.size();
  const bool max_ok = s.bounds.max.size() <= 1 || s.bounds.max.size() == n;
  const int32_t lo = std::max<int32_t>(1, s.bounds.min);
  std::vector<int32_t> cur(n);
  for (size_t i = 0; i < n; ++i) {
    int32_t hi = max_ok ? std::max(lo, rank_max(s.bounds, i)) : lo;
    cur[i] = std::clamp(s.nodes[i].batch_size, lo, max_ok ? hi : std::max(lo, s.nodes[i].batch_size));
  }
  return cur;
}

// Steps the window behind this decision had (the longest any rank reports).
int32_t window_steps(const ClusterState& s) {
  int32_t steps = 0;
  for (const NodeRecord& r : s.nodes) steps = std::max(steps, r.steps);
  return steps;
}

// Mean per-step time outside compute and straggler wait (data, allreduce, optimizer).
double overhead_of(const ClusterState& s) {
  double sum = 0;
  for (const NodeRecord& r : s.nodes) sum += std::max(0.0, r.data_s + r.comm_s + r.optimizer_s);
  return s.nodes.empty() ? 0 : sum / double(s.nodes.size());
}

// The models restart from a window's last quarter after a change, keep score of persistence
// against their own forecasts, follow spells of a few steps, and restart on clear changes of speed
// under the restart threshold (see RankTimeModels::Options).
RankTimeModels::Options model_options(const RuleSet& rules) {
  RankTimeModels::Options o;
  o.restart_at_recent = true;
  o.score_persistence = true;
  o.spells = true;
  o.level_shifts = rules.on(Rule::kLevelShifts);
  return o;
}

// One flag per rank of n, set for `ranks`.
std::vector<bool> rank_flags(const std::vector<size_t>& ranks, size_t n) {
  std::vector<bool> flags(n, false);
  for (size_t r : ranks) {
    if (r < n) flags[r] = true;
  }
  return flags;
}

// The ranks whose models are of a slowdown: the next decision reads their return by the window's
// last quarter however short (RankTimeModels, items 24 and 26), and so does the alarm.
std::vector<bool> in_slowdown(const RankTimeModels& models) {
  std::vector<bool> slowed(models.models().size());
  for (size_t i = 0; i < slowed.size(); ++i) slowed[i] = models.in_slowdown(i);
  return slowed;
}

// The ranks `alarm` reported whose window's last quarter holds as many steps as the alarm needs:
// the decision reads their change by that quarter (docs/AGENT.md item 32). A quarter of one or two
// steps is noise at 24 % step noise (models restarted from one step cost up to 0.7 % on random
// clusters with windows of 5).
std::vector<bool> read_by_quarter(const ClusterState& s, const ChangeAlarm& alarm) {
  const std::vector<bool>& reported = alarm.fired_ranks();
  std::vector<bool> by_quarter(s.nodes.size(), false);
  for (size_t i = 0; i < by_quarter.size() && i < reported.size(); ++i)
    by_quarter[i] = reported[i] && alarm.quarter_readable(std::max<int64_t>(s.nodes[i].steps, 1));
  return by_quarter;
}

// The alarm asks only where the mean since the last decision, or its last quarter, shows the change
// as the models' restart rule would (RankTimeModels::Options::change_threshold); the decision reads
// the ranks it reported by that quarter (docs/AGENT.md item 32).
ChangeAlarm::Options alarm_options() {
  ChangeAlarm::Options o;
  o.confirm = RankTimeModels::Options{}.change_threshold;
  o.recent = true;
  return o;
}

// A confirmed change lifts the per-window limit for the ranks whose models restarted (no centre),
// and moves it for the others by the common factor that keeps the global batch: they take up (or
// give back) what the restarted ranks leave, spread as their plan is, and around that each may
// still move by at most `max_change`. Lifting it for every rank let a rank whose affine fit had
// read a drifting speed as a fixed cost jump 22 -> 86 samples on another rank's restart and become
// the straggler (a random 228-rank scenario, 1.038x gns; docs/AGENT.md, item 15).
std::vector<double> change_centres(const std::vector<bool>& changed, const std::vector<int32_t>& current,
                                   double global_batch, const std::vector<double>& desired) {
  double left = global_batch, unchanged = 0;
  for (size_t i = 0; i < desired.size(); ++i) {
    if (changed[i])
      left -= desired[i];
    else
      unchanged += current[i];
  }
  const double common = unchanged > 0 && left > 0 ? left / unchanged : 1.0;
  std::vector<double> centre(desired.size());
  for (size_t i = 0; i < desired.size(); ++i) centre[i] = changed[i] ? std::nan("") : common * current[i];
  return centre;
}

// Whether moving from `current` to `next` gains more over the coming `horizon` steps than a plan
// change costs (`cost_steps`, SwitchCost): the gain is the drop of the slowest rank's forecast
// compute time (the last window's models), in steps of the current one; where the split weighed
// the ranks' noise, of the expected slowest time under that noise, which the split minimised (a
// move by the means alone would undo it). A global batch that
// changes (adaptive B) always pays: the plan must follow it. `gain_steps` receives the gain.
bool move_pays(const BalanceView& view, const std::vector<int32_t>& current, const std::vector<int32_t>& next,
               int32_t horizon, double cost_steps, double* gain_steps) {
  *gain_steps = 0;
  if (view.forecast.size() != current.size() || next.size() != current.size()) return true;
  if (std::accumulate(current.begin(), current.end(), 0LL) != std::accumulate(next.begin(), next.end(), 0LL))
    return true;
  const double t_now = judged_step_time(view.forecast, current, view.noise);
  const double t_next = judged_step_time(view.forecast, next, view.noise);
  if (!(t_now > 0) || !std::isfinite(t_now) || !std::isfinite(t_next)) return true;
  *gain_steps = horizon * (t_now - t_next) / t_now;
  return *gain_steps > cost_steps;
}

}  // namespace

std::vector<double> DynamixPolicy::expected_compute(const std::vector<int32_t>& plan) const {
  if (!models_.ready() || models_.models().size() != plan.size()) return {};
  std::vector<double> expected(plan.size());
  for (size_t i = 0; i < plan.size(); ++i) expected[i] = models_.models()[i].at(plan[i]);
  return expected;
}

bool DynamixPolicy::wants_decision(const std::vector<double>& compute_s) {
  switch_cost_.observe(compute_s);
  spell_watch_.observe(compute_s);
  if (spell_watch_.spell_open()) switch_cost_.disturb();
  if (start_.armed()) return rules_.on(Rule::kStartCheck) && start_.observe(compute_s);
  const bool tracking_due = cadence_.observe(models_.tracking()) && rules_.on(Rule::kTracking);
  if (spells_.recheck_due(spell_watch_)) recheck_ = spells_.held();
  if (rules_.on(Rule::kChangeAlarm) && alarm_.observe(compute_s)) {
    alarm_raised_ = true;  // answered by the decision it asks for, or by the regular one just after
    return !cadence_.regular_decision_near();
  }
  return tracking_due || !recheck_.empty();
}

double DynamixPolicy::target_batch(const ClusterState& s, const std::vector<int32_t>& current) const {
  const double b_cur = std::accumulate(current.begin(), current.end(), 0.0);
  if (s.bounds.fixed_global) return s.bounds.global_batch > 0 ? s.bounds.global_batch : b_cur;
  // Adaptive B: the goodput-optimal global batch of the fitted models and the noise scale.
  const double noise = s.global.noise_scale;
  if (!models_.ready() || !(noise > 0) || !std::isfinite(noise)) return b_cur;
  return goodput_batch(models_, s.bounds, b_cur, overhead_of(s), noise, kGoodputMinGain);
}

double DynamixPolicy::estimated_ideal(const ClusterState& s, const BalanceView& view) const {
  if (!view.ready || !(view.predicted_compute_s > 0)) return 0;
  return view.global_batch / (view.predicted_compute_s + overhead_of(s));
}

DynamixPolicy::DynamixPolicy(DynamixOptions o)
    : config_(o.ppo),
      learn_(o.learn),
      min_move_gain_(o.min_move_gain),
      rules_(o.rules),
      log_(o.log),
      node_norm_(kNodeFeatures),
      global_norm_(kGlobalFeatures),
      models_(model_options(o.rules)),
      alarm_(alarm_options()),
      reward_(o.ppo.reward),
      rollout_(std::make_unique<Rollout>()),
      rng_(o.ppo.seed) {
  validate(config_);
  DYNAMIX_CHECK(min_move_gain_ >= 0 && min_move_gain_ < 1,
                "dynamix: min_move_gain must be in [0, 1), got " + std::to_string(min_move_gain_));
  learner_ = std::make_unique<PpoLearner>(config_, kNodeFeatures, kGlobalFeatures);
  std::string source = o.checkpoint;
  if (!o.checkpoint.empty()) {
    load(o.checkpoint);
  } else if (!o.archive.empty()) {
    load_archive(o.archive, o.archive_name);
    source = o.archive_name;
  }
  publish_snapshot();
  log("dynamix: " + std::string(learn_ ? "fine-tuning " : "inference from ") +
      (source.empty() ? "an untrained policy" : source) +
      "; a move must gain >= " + format_number("%g", 100 * min_move_gain_) +
      " % of the step (policy.min_move_gain; less where the models forecast within the ranks' noise)" +
      (rules_.all_on() ? std::string() : "; rules off (policy.rules_off): " + rules_.off_names()) +
      "\nppo config:\n" + to_string(config_));
  if (learn_ && config_.background_update) worker_ = std::thread(&DynamixPolicy::worker_loop, this);
}

DynamixPolicy::~DynamixPolicy() {
  {
    std::lock_guard<std::mutex> lk(queue_mutex_);
    stop_ = true;
  }
  queue_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void DynamixPolicy::log(const std::string& line) const {
  if (log_) *log_ << line << (line.empty() || line.back() != '\n' ? "\n" : "") << std::flush;
}

DynamixPolicy::NetPtr DynamixPolicy::snapshot() const {
  std::lock_guard<std::mutex> lk(snapshot_mutex_);
  return snapshot_;
}

// Called with learner_mutex_ held (or before the worker exists).
void DynamixPolicy::publish_snapshot() {
  ActorCritic copy(kNodeFeatures, kGlobalFeatures, config_.hidden, kMoves, config_.seed);
  copy_parameters(learner_->net(), copy);
  copy->eval();
  std::lock_guard<std::mutex> lk(snapshot_mutex_);
  snapshot_ = copy.ptr();
}

BatchPlan DynamixPolicy::decide(const ClusterState& s) {
  const size_t n = s.nodes.size();
  if (n == 0) {
    BatchPlan empty;
    empty.note = "dynamix: state has no ranks";
    return empty;
  }
  const std::vector<int32_t> current = sanitized_current(s);
  const bool asked_by_alarm = std::exchange(alarm_raised_, false);
  const std::vector<size_t> recheck = std::exchange(recheck_, {});
  start_.disarm();  // whatever brought it, the run's first decision is taken
  cadence_.decided(s.global.step, window_steps(s));
  try {
    {
      std::lock_guard<std::mutex> lk(queue_mutex_);
      if (!update_error_.empty()) {
        std::string why = "dynamix: ppo update failed (" + update_error_ + "); weights restored";
        update_error_.clear();
        return fallback(s, current, why);
      }
    }
    // A resized cluster or a restarted run (window 0) begins a new episode.
    if (!prev_batches_.empty() && (prev_batches_.size() != n || s.window == 0)) forget_episode();
    const std::vector<bool> alarmed = asked_by_alarm ? read_by_quarter(s, alarm_) : std::vector<bool>{};
    models_.observe(s, &spell_watch_.disturbed(), &alarmed);
    steady_.observe(s, models_, spell_watch_.disturbed());
    // A decision the change alarm asked for moves only where the window confirms a change (some
    // rank's model restarted, by the window's mean or last quarter): a few slow steps that it does
    // not bear out were noise, and a short window's split would chase it (a homogeneous run moved
    // a rank to 35 of 32 for 80 steps on such an alarm).
    const auto& readings = models_.readings();
    // A spell held through that outlasted its like (agent/short_spells.h) is a change confirmed
    // since, on the ranks it slowed.
    std::vector<bool> changed(n);
    for (size_t i = 0; i < n; ++i) changed[i] = readings[i].restarted;
    for (size_t i : recheck) {
      if (i < n) changed[i] = true;
    }
    const bool restarted = std::find(changed.begin(), changed.end(), true) != changed.end();
    const bool unconfirmed = asked_by_alarm && !restarted;
    // A rank back from a slowdown (its models' history from before resumed) is a change confirmed
    // too: the plan that followed the slowdown is wrong from now on, however the window came.
    const bool resumed =
        std::any_of(readings.begin(), readings.end(), [](const auto& r) { return r.resumed; });
    const bool confirmed = ((asked_by_alarm || !recheck.empty()) && restarted) || resumed;
    const BalanceView view = balance_view(s, models_, target_batch(s, current), rules_, &steady_);
    EncodedState enc = encode_state(s, models_, view);
    ablate_features(enc, config_.ablate);
    if (!enc.finite) return fallback(s, current, "dynamix: non-finite state: " + enc.problem);
    const auto rows = static_cast<int64_t>(n);
    if (learn_) {
      node_norm_.update(enc.node, rows);
      global_norm_.update(enc.global, 1);
    }
    std::vector<float> node = node_norm_.normalize(enc.node, rows, config_.obs_clip);
    std::vector<float> glob = global_norm_.normalize(enc.global, 1, config_.obs_clip);

    // Inference on the snapshot: never waits for an update.
    NetPtr net = snapshot();
    torch::NoGradGuard no_grad;
    torch::Tensor pooled = ActorCriticImpl::pool(torch::from_blob(node.data(), {1, rows, kNodeFeatures}));
    PolicyOutput out = net->forward_pooled(pooled, torch::from_blob(glob.data(), {1, kGlobalFeatures}));
    torch::Tensor logp = torch::log_softmax(out.logits[0], -1).contiguous();  // [A]
    const double value = out.value.item<double>();
    if (!std::isfinite(value) || !torch::isfinite(logp).all().item<bool>()) {
      return fallback(s, current, "dynamix: non-finite logits or value");
    }

    // Reward the previous action with the window it produced, and store its transition.
    BatchPlan plan;
    if (!prev_batches_.empty()) {
      last_reward_ = reward_.reward(s, prev_batches_, estimated_ideal(s, view));
      plan.reward = last_reward_.total;
      plan.has_reward = true;
      if (pending_ && learn_) {
        pending_->reward = last_reward_.total;
        push_transition(value);
      }
    } else {
      reward_.observe_first(s);
    }

    // Act: sample while learning, argmax otherwise; every rank takes the move toward its proposal.
    // An unconfirmed alarm holds (recorded as the hold move when learning: a constrained action).
    int64_t action = unconfirmed ? int64_t{kHold} : learn_ ? sample(logp) : logp.argmax().item<int64_t>();
    const MoveSpec& move = kMoveSpecs[action];
    std::vector<double> desired(n);
    plan.actions.assign(n, static_cast<double>(action));
    for (size_t i = 0; i < n; ++i) {
      const double target = move.fast ? view.fast[i] : view.slow[i];
      desired[i] = current[i] * std::pow(target / current[i], move.fraction);
    }
    BatchBounds bounds = s.bounds;
    // A change the alarm reported and the window confirmed (some rank's model restarted) lifts the
    // per-window limit where the change happened: the plan it bounded was fitted to speeds that are
    // gone, and a 4x slowdown halved per window takes two windows to absorb (a recovering rank at 8
    // samples takes four). Up to v2.12, which lifted it for every rank, it stayed under drifting
    // speeds (tracking), a damper worth 2-3 % on dynamic_drift; lifted only where the change
    // happened, it costs nothing there, and a real rank slowing 4x while ranks sharing cores
    // wander is absorbed in one decision instead of two.
    std::vector<double> centre;
    if (confirmed) centre = change_centres(changed, current, view.global_batch, desired);
    bounds.fixed_global = true;
    bounds.global_batch = static_cast<int32_t>(std::lround(view.global_batch));
    BatchPlan projected = project_plan(desired, current, bounds, centre.empty() ? nullptr : &centre);
    plan.batch_sizes = std::move(projected.batch_sizes);
    plan.note = std::move(projected.note);
    if (!view.note.empty()) plan.note = view.note + (plan.note.empty() ? "" : "; " + plan.note);
    if (unconfirmed) plan.note = "change alarm not borne out by the window's mean: plan kept";
    // A slowdown that the cluster's earlier spells say ends before following it pays is held
    // through (agent/short_spells.h). Otherwise a move that does not pay for the plan change it
    // costs is not taken (both recorded as the hold move when learning, as above). A confirmed
    // change is always followed, but for the recovery from a spell held through: the plan held
    // already fits it, and a move then is judged as any other.
    const ShortSpells::Verdict spell =
        rules_.on(Rule::kShortSpells)
            ? spells_.judge(spell_watch_, view.forecast, view.noise, current, plan.batch_sizes,
                            switch_cost_.cost(), ChangeAlarm::latency_steps())
            : ShortSpells::Verdict{};
    // A spell held through after the plan had followed it (the change alarm's decision followed it,
    // and the next one, told that it would end within a step or two, held that follow): the plan in
    // force does not fit the ranks once they are back, and the spell's end is answered as a
    // followed spell's is, by the plan before it (SlowdownReturn). Kept, the follow plan stayed
    // 36 steps after the spell on the real spells cell, 60 in the simulator (docs/AGENT.md item 39).
    const bool held_follow_ended = spell.held_spell_ended() && !slowdown_return_.slowed().empty();
    const bool followed = (confirmed && !spell.held_spell_ended()) || held_follow_ended;
    // A spell held through that SpellWatch saw since the last decision and sees no more: the plan
    // held was made for the ranks' speeds outside it and is kept. The return's first steps are no
    // measure of them: on the real spells cell a held spell's ranks ran 10-15 % fast for 3-4 steps
    // after it, and the decision on them moved equal ranks to [30, 31, 33, 34] (docs/AGENT.md
    // item 37).
    const bool held_return = spell.held_spell_ended() && !held_follow_ended && !view.recurring_hold &&
                             spells_over(rank_flags(spell.ended, n));
    if (spell.hold || held_return) {
      plan.batch_sizes = current;
      plan.actions.assign(n, static_cast<double>(kHold));
      plan.note = spell.hold ? spell.note : "the spell held through is over: plan kept";
      action = kHold;
    } else if (!followed && rules_.on(Rule::kPaidMoves) &&
               keep_unpaid_move(view, current, desired, bounds, window_steps(s), plan)) {
      action = kHold;
    } else if (rules_.on(Rule::kSlowdownReturn)) {
      restore_plan_before_slowdown(view, current, bounds, centre, window_steps(s), plan);
    }
    if (!spell.hold && !followed && view.equal_ranks && rules_.on(Rule::kHomogeneousHold)) {
      restore_equal_plan(view, current, bounds, window_steps(s), plan);
    }
    slowdown_return_.decided(models_, current, plan.batch_sizes);
    switch_cost_.decided(plan.batch_sizes != current);

    if (learn_) {
      pending_ = std::make_unique<Transition>();
      pending_->pooled.assign(pooled.data_ptr<float>(), pooled.data_ptr<float>() + pooled.numel());
      pending_->global = std::move(glob);
      pending_->action = action;
      pending_->logp = logp[action].item<double>();
      pending_->value = value;
    }
    prev_batches_ = current;
    last_safe_ = plan.batch_sizes;
    alarm_.arm(expected_compute(plan.batch_sizes), in_slowdown(models_));
    spell_watch_.arm(models_, plan.batch_sizes);
    return plan;
  } catch (const std::exception& e) {
    auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    return fallback(s, current,
                    std::string("dynamix: ") + (c10_error ? c10_error->what_without_backtrace() : e.what()));
  }
}

bool DynamixPolicy::keep_unpaid_move(const BalanceView& view, const std::vector<int32_t>& current,
                                     const std::vector<double>& desired, const BatchBounds& bounds,
                                     int32_t horizon, BatchPlan& plan) const {
  const double cost = switch_cost_.cost(), least = move_floor() * horizon, bar = std::max(cost, least);
  double gain = 0;
  if (!(bar > 0) || plan.batch_sizes == current) return false;
  // Where the move leads without the per-window limit: a large imbalance is closed over several
  // windows, none of whose limited steps need gain much on its own.
  BatchBounds unlimited = bounds;
  unlimited.max_change = 0;
  const std::vector<int32_t> destination =
      bounds.max_change > 0 ? project_plan(desired, current, unlimited).batch_sizes : plan.batch_sizes;
  // A move no step can be slower for pays where it pays for the plan change: the floor's forecast
  // error is not its risk.
  if (safe_growth(view, current, plan.batch_sizes, horizon) &&
      move_pays(view, current, plan.batch_sizes, horizon, cost, &gain) && gain > 0) {
    plan.note += std::string(plan.note.empty() ? "" : "; ") + "move worth at least " +
                 format_number("%.2f", gain) +
                 " steps over the window: it grows only idle ranks, whose forecasts without a fixed cost "
                 "bound their time from above: moved";
    return false;
  }
  if (move_pays(view, current, destination, horizon, bar, &gain)) {
    const double most = min_move_gain_ * horizon;
    if (gain > 0 && gain <= most) {  // taken because the floor fell (item 22)
      plan.note += std::string(plan.note.empty() ? "" : "; ") + "move worth " + format_number("%.2f", gain) +
                   " steps over the window, under policy.min_move_gain's " + format_number("%.2f", most) +
                   " but over " + format_number("%.2f", least) + ", " + format_number("%g", kFloorErrors) +
                   "x the models' forecast error beyond the ranks' noise: moved";
    }
    return false;
  }
  plan.batch_sizes = current;
  plan.actions.assign(current.size(), static_cast<double>(kHold));
  plan.note = "move worth " + format_number("%.2f", gain) + " steps over the window, a plan change costs " +
              format_number("%.2f", cost) + " and a move must gain " + format_number("%.2f", least) +
              ": plan kept";
  return true;
}

void DynamixPolicy::restore_plan_before_slowdown(const BalanceView& view, const std::vector<int32_t>& current,
                                                 const BatchBounds& bounds, const std::vector<double>& centre,
                                                 int32_t horizon, BatchPlan& plan) {
  // Not under the recurring hold: its slow phase's plan is meant to outlast each phase, and the plan
  // before the slowdown undoes it (seed 7 of RecurringInterferenceIsPlannedForNotChased, once the
  // models weighed windows by their steps: rank 2 restored from 7 to 23 samples every fast phase and
  // shrunk again in the next slow one, 0.948 of the ideal against 0.982).
  if (view.recurring_hold) return;
  const std::vector<int32_t>* before = slowdown_return_.offer(models_);
  if (!before || before->size() != current.size() || plan.batch_sizes == *before) return;
  // The plan before, as the bounds in force allow it now (a memory cap may have come meanwhile).
  const std::vector<double> wanted(before->begin(), before->end());
  const std::vector<int32_t> back =
      project_plan(wanted, current, bounds, centre.empty() ? nullptr : &centre).batch_sizes;
  if (back != *before) return;
  // Every followed slowdown was a spell that SpellWatch saw since the last decision and sees no
  // more, the models back at the rank's speed before it too (offer()): the plan before fits the
  // cluster again, and the models' windows at the followed plan are no evidence against it. On
  // this project's 2-core VM a core's time grows faster than its work (caches), so the models
  // fitted at the followed plan read the ranks it shrank as faster and the ranks it grew as
  // slower, and the split of their return moved equal ranks to [30, 29, 35, 34], which the move
  // floor kept for 80 steps (docs/AGENT.md item 37).
  std::string why;
  if (spells_over(slowdown_return_.slowed()))
    why = "(the spell it followed is over)";
  else if (!offered_plan_holds(view, back, plan, horizon, "the split", why))
    return;
  plan.batch_sizes = back;
  plan.note +=
      std::string(plan.note.empty() ? "" : "; ") + "back from a slowdown: the plan before it restored " + why;
  slowdown_return_.reset();
}

bool DynamixPolicy::spells_over(const std::vector<bool>& ranks) const {
  const std::vector<uint8_t>& flags = spell_watch_.disturbed();
  if (ranks.size() != flags.size() || std::none_of(ranks.begin(), ranks.end(), [](bool b) { return b; }))
    return false;
  const std::vector<SpellWatch::Open> open = spell_watch_.open();
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (!ranks[i]) continue;
    // Seen since the last decision and not open now. Not kSpellEnded alone: a step at the
    // followed plan's smaller batch, where the reference overestimates the rank's time, can read
    // slow or not around the threshold, and one such step after the end clears that flag.
    if (!(flags[i] & RankTimeModels::kSpellSeen)) return false;
    if (std::any_of(open.begin(), open.end(), [&](const SpellWatch::Open& o) { return o.rank == i; }))
      return false;
  }
  return true;
}

void DynamixPolicy::restore_equal_plan(const BalanceView& view, const std::vector<int32_t>& current,
                                       const BatchBounds& bounds, int32_t horizon, BatchPlan& plan) const {
  const auto [lo, hi] = std::minmax_element(plan.batch_sizes.begin(), plan.batch_sizes.end());
  if (plan.batch_sizes.empty() || *hi - *lo <= std::max(1, bounds.multiple)) return;  // even, up to rounding
  const std::vector<double> even(current.size(), view.global_batch / double(current.size()));
  const std::vector<int32_t> equal = project_plan(even, current, bounds).batch_sizes;
  std::string why;
  if (equal == plan.batch_sizes ||
      !offered_plan_holds(view, equal, plan, horizon, "the plan it replaces", why))
    return;
  plan.batch_sizes = equal;
  plan.note = "equal ranks: the equal split restored " + why;
}

bool DynamixPolicy::offered_plan_holds(const BalanceView& view, const std::vector<int32_t>& offered,
                                       const BatchPlan& plan, int32_t horizon, const char* rival,
                                       std::string& why) const {
  const double least = move_floor() * horizon;
  double gain = 0;
  if (move_pays(view, offered, plan.batch_sizes, horizon, least, &gain)) return false;
  why = std::string("(") + rival + " gains " + format_number("%.2f", gain) +
        " steps over the window on it, under the " + format_number("%.2f", least) + " a move must gain)";
  return true;
}

bool DynamixPolicy::safe_growth(const BalanceView& view, const std::vector<int32_t>& current,
                                const std::vector<int32_t>& next, int32_t horizon) const {
  // A rank that followed a slowdown or a noisy split down to a small batch, its fixed cost
  // undetermined, is modelled by the proportional prior, which reads the fixed cost as per-sample
  // cost: the balanced plan of those models grows it a sample or two at a time, each step forecast
  // to gain under the move floor, and the way back took 400-1,400 steps. But that forecast is an
  // upper bound on the grown rank's time, and a rank that shrinks gets no slower: where every grown
  // rank was clearly idle, the step cannot get slower than now.
  // Idle in the last window (the forecast) and over the rank's history (its model), so that a
  // window in which a rank's speed wandered up does not pass for room to grow.
  // And only in a calm window: the room a spell or a change makes on the other ranks lasts as long as
  // it does (a real run's first window, with a spell in it, and a spell read at its third step
  // were both taken for room to grow).
  const size_t n = current.size();
  const std::vector<RankTimeModels::Model>& fitted = models_.models();
  if (view.forecast.size() != n || fitted.size() != n || next.size() != n || horizon < 1 || next == current)
    return false;
  const std::vector<uint8_t>& disturbed = spell_watch_.disturbed();
  for (size_t i = 0; i < n; ++i) {
    const RankTimeModels::Reading& r = models_.readings()[i];
    if (r.restarted || r.observations < kGrowHistory || (i < disturbed.size() && disturbed[i] != 0))
      return false;
  }
  double slowest = 0, slowest_fitted = 0;
  for (size_t i = 0; i < n; ++i) {
    slowest = std::max(slowest, view.forecast[i].at(current[i]));
    slowest_fitted = std::max(slowest_fitted, fitted[i].at(current[i]));
  }
  for (size_t i = 0; i < n; ++i) {
    if (next[i] <= current[i]) continue;
    if (!models_.prior_bounds_growth(i, next[i])) return false;
    const double se = models_.readings()[i].step_noise / std::sqrt(double(horizon));
    const double room = 1 - std::max(kGrowIdle, kGrowNoiseZ * se);
    if (!(view.forecast[i].at(current[i]) <= room * slowest &&
          fitted[i].at(current[i]) <= room * slowest_fitted))
      return false;
  }
  return true;
}

double DynamixPolicy::move_floor() const {
  // A forecast gain within three of the models' errors beyond noise could be the ranks' wandering
  // between windows, not a lasting imbalance. Where speeds hold still that error is near 0 and so
  // is the floor: the simulator's stationary ranks lost up to 5 % to a fixed 4 % floor (a random
  // 74-rank cluster, docs/AGENT.md item 22); on this project's 2-core VM it is 5-10 %, and the
  // floor stays at min_move_gain.
  const double excess = models_.excess_forecast_rms();
  return std::isfinite(excess) ? std::min(min_move_gain_, kFloorErrors * excess) : min_move_gain_;
}

int64_t DynamixPolicy::sample(const torch::Tensor& logp) {
  auto lp = logp.accessor<float, 1>();
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  double cum = 0;
  int64_t a = 0;
  for (; a < logp.size(0) - 1; ++a) {
    cum += std::exp(lp[a]);
    if (u < cum) break;
  }
  return a;
}

BatchPlan DynamixPolicy::fallback(const ClusterState& s, const std::vector<int32_t>& current,
                                  const std::string& why) {
  const size_t n = s.nodes.size();
  pending_.reset();  // that action's outcome is not attributable any more
  std::vector<double> desired(current.begin(), current.end());
  if (last_safe_.size() == n) desired.assign(last_safe_.begin(), last_safe_.end());
  BatchBounds bounds = s.bounds;
  std::string extra;
  if (bounds.max.size() > 1 && bounds.max.size() != n) {
    bounds.max.clear();
    extra = "; bounds.max has " + std::to_string(s.bounds.max.size()) + " entries for " + std::to_string(n) +
            " ranks, ignored";
  }
  BatchPlan plan = project_plan(desired, current, bounds);
  plan.note = why + (plan.note.empty() ? "" : "; " + plan.note) + extra;
  prev_batches_ = current;
  last_safe_ = plan.batch_sizes;
  alarm_.arm({});  // no model to compare against until a decision succeeds
  spell_watch_.arm(models_, plan.batch_sizes);
  switch_cost_.decided(plan.batch_sizes != current);
  log(plan.note);
  return plan;
}

void DynamixPolicy::push_transition(double next_value) {
  rollout_->steps.push_back(std::move(*pending_));
  pending_.reset();
  if (static_cast<int64_t>(rollout_->steps.size()) >= config_.rollout_windows) hand_off(next_value);
}

void DynamixPolicy::hand_off(double last_value) {
  rollout_->last_value = last_value;
  if (config_.background_update && worker_.joinable()) {
    {
      std::lock_guard<std::mutex> lk(queue_mutex_);
      if (queued_) ++dropped_rollouts_;  // the learner is behind: keep only the freshest data
      queued_ = std::move(rollout_);
    }
    queue_cv_.notify_all();
  } else {
    run_update(*rollout_);
  }
  rollout_ = std::make_unique<Rollout>();
}

void DynamixPolicy::worker_loop() {
  std::unique_lock<std::mutex> lk(queue_mutex_);
  for (;;) {
    queue_cv_.wait(lk, [this] { return stop_ || queued_ != nullptr; });
    if (stop_) return;
    std::unique_ptr<Rollout> rollout = std::move(queued_);
    busy_ = true;
    lk.unlock();
    run_update(*rollout);
    lk.lock();
    busy_ = false;
    queue_cv_.notify_all();
  }
}

void DynamixPolicy::run_update(Rollout& rollout) {
  std::string error;
  UpdateStats stats;
  {
    std::lock_guard<std::mutex> lk(learner_mutex_);
    try {
      stats = learner_->update(rollout);
      if (!parameters_finite(learner_->net())) throw Error("non-finite weights after the update");
      publish_snapshot();
    } catch (const std::exception& e) {
      auto* c10_error = dynamic_cast<const c10::Error*>(&e);
      error = c10_error ? c10_error->what_without_backtrace() : e.what();
      ActorCritic good(snapshot());  // the last published weights are the last good ones
      copy_parameters(good, learner_->net());
      learner_->reset_optimizer();
    }
  }
  std::lock_guard<std::mutex> lk(queue_mutex_);
  if (!error.empty()) {
    update_error_ = error;
    return;
  }
  ++updates_;
  last_stats_ = std::make_unique<UpdateStats>(stats);
  log("dynamix: update " + std::to_string(updates_) + " " + stats.to_string() +
      (dropped_rollouts_ ? " dropped_rollouts=" + std::to_string(dropped_rollouts_) : ""));
}

void DynamixPolicy::forget_episode() {
  pending_.reset();
  prev_batches_.clear();
  reward_.reset();
  models_.reset();
  steady_.reset();
  switch_cost_.reset();  // each episode measures its own (a simulated cluster's cost is its own)
  spells_.reset();
  spell_watch_.reset();
  slowdown_return_.reset();
}

double DynamixPolicy::end_episode(const ClusterState& final_state) {
  double reward = 0;
  if (!prev_batches_.empty() && prev_batches_.size() == final_state.nodes.size()) {
    models_.observe(final_state);
    steady_.observe(final_state, models_, {});
    const BalanceView view = balance_view(
        final_state, models_, target_batch(final_state, sanitized_current(final_state)), rules_, &steady_);
    last_reward_ = reward_.reward(final_state, prev_batches_, estimated_ideal(final_state, view));
    reward = last_reward_.total;
    if (learn_ && pending_) {
      pending_->reward = reward;
      pending_->terminal = true;
      push_transition(0.0);
    }
  }
  forget_episode();
  cadence_.reset();
  recheck_.clear();
  alarm_.arm({});
  alarm_raised_ = false;  // a request from the episode's last steps is not the next episode's
  start_.arm();           // the next episode starts from its own guess
  return reward;
}

void DynamixPolicy::wait_for_updates() {
  std::unique_lock<std::mutex> lk(queue_mutex_);
  queue_cv_.wait(lk, [this] { return queued_ == nullptr && !busy_; });
}

void DynamixPolicy::set_learning(bool learn) {
  if (learn == learn_) return;
  learn_ = learn;
  pending_.reset();
  if (learn_ && config_.background_update && !worker_.joinable()) {
    worker_ = std::thread(&DynamixPolicy::worker_loop, this);
  }
}

int64_t DynamixPolicy::updates() const {
  std::lock_guard<std::mutex> lk(queue_mutex_);
  return updates_;
}

UpdateStats DynamixPolicy::last_update() const {
  std::lock_guard<std::mutex> lk(queue_mutex_);
  return last_stats_ ? *last_stats_ : UpdateStats{};
}

}  // namespace dynamix
