// DYNAMIX — slowdowns too short to follow: hold the plan through a spell expected to end before
// following it pays.
//
// On shared nodes a rank is often slowed for a few steps at a time (a neighbour's checkpoint write
// or data load, a daemon, a collector pause), on any rank, at random. The change alarm reports such
// a spell a few steps after it began, and following it costs two plan changes (SwitchCost: there
// and back) and the steps of the wrong plan after it ends, before its end is answered in turn; it
// gains only over the steps the spell has left. SpellWatch measures every rank's spells step by
// step; with at least kMinSpells ended ones known, ShortSpells holds a slowdown through where the
// gain over the steps its like had left does not pay for that cost, and asks for a decision again
// if it outlasts them. Measured in docs/AGENT.md item 24.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "agent/rank_models.h"

namespace dynamix {

// Slow spells measured step by step: a rank whose compute time is `factor` times what its model
// before the spell predicts at its batch in force, for at least `min_steps` steps in a row. The
// reference is the model in force when the spell began, kept through the spell (the live models
// restart to the slow speed), so a spell ends when the rank is back at its speed, whatever the plan
// did meanwhile; outside a spell, a rank's first `min_steps` steps at a new batch calibrate it
// (their median; a step slower than the reference can miss by at that batch is a spell's, not a
// calibration's). A slow step is also beyond kNoiseZ of the rank's step noise (RankTimeModels::
// Reading::step_noise): 139 ranks with 29 % step noise made short "spells" of noise, which then
// said a real slowdown of other ranks would end soon (a random 226-rank cluster, 3.5 % slower).
// Only ratios: no unit matters.
class SpellWatch {
 public:
  struct Options {
    double factor = 2.0;    // as the change alarm's
    int32_t min_steps = 3;  // as the change alarm's: shorter spells never reach a decision
    size_t newest = 12;     // ended spells kept, over all ranks
  };
  struct Open {
    size_t rank = 0;
    int64_t since = 0;  // the step count at which its spell began
  };

  SpellWatch() : SpellWatch(Options{}) {}
  explicit SpellWatch(Options options) : options_(options) {}

  // Starts over, as at a run's start. Before the run's first decision there is no model to refer
  // to: each rank's reference is then its own steps' median, from its steps after the
  // kStartupSteps that start-up costs inflate, at the batch it starts with (observe() arms it so
  // after a reset; the first arm() ends it). Which steps: those within the threshold of the least
  // median of min_steps steps in a row, and every start step is judged again against it when that
  // level falls (kStartSteps at most), so that a spell begun in the first steps is no reference:
  // calibrated on the first 3 steps, two of them a spell's, the reference was the spell's speed,
  // the spell went unseen, and its mean moved equal ranks to [31, 37, 30, 30] on the real spells
  // cell (2 runs of 4; docs/AGENT.md item 35). A spell in the first window is
  // thus seen as later ones are, and that window's mean, neither the speed before nor after, is not
  // fitted: on a real run of four equal ranks, a spell of 7 of the window's 18 steps read as two
  // ranks 1.7x slower moved the plan to [35, 36, 29, 28] at the first decision, and it took 160
  // steps to come back (docs/AGENT.md item 33).
  void reset();
  // After a decision: the plan in force from the next step on, and the models. Ranks outside a
  // spell take their model as their reference, unless the models' last change of the rank was a
  // slowdown (its restart log): a model of the slow speed, or one half-way back, is no reference.
  void arm(const RankTimeModels& models, const std::vector<int32_t>& plan);
  // One step's compute times, one per rank.
  void observe(const std::vector<double>& compute_s);

  int64_t steps() const { return steps_; }  // steps observed since reset()
  // Lengths of the newest ended spells, newest first.
  std::vector<int64_t> lengths() const { return {ended_.begin(), ended_.end()}; }
  std::vector<Open> open() const;
  bool spell_open() const;
  // Per rank since the last arm(), RankTimeModels::kSpellSeen, kSpellBegan and kSpellEnded: a
  // spell was seen, began, or ended with no slow step since (RankTimeModels::observe's `spells`).
  // kSpellSeen stays when a slow step after a spell's end clears kSpellEnded: the window is still
  // not the rank's speed.
  // Counted from min_steps on, as spells are: flagged from two steps on, noise alone flagged the
  // windows of 256 equal ranks with 30 % step noise.
  const std::vector<uint8_t>& disturbed() const { return disturbed_; }
  // The reference model of rank i (its speed before the spell it is in; empty before arm()).
  const RankTimeModels::Model& reference(size_t i) const { return reference_[i]; }

 private:
  Options options_;
  // One step of rank i, not slow, toward the reference's calibration at a new batch.
  void calibrate(size_t i, double ratio);
  // Rank i runs on its start reference and has fewer than kStartSteps steps buffered.
  bool starting(size_t i) const;
  // One start step of rank i (NaN: unusable), toward its start reference and the start's spells.
  void observe_start(size_t i, double t);
  // Rank i's start reference from its steps near its level, and every start step judged against it.
  void rejudge_start(size_t i);
  // Rank i's start step j against its start reference, as observe() judges a step.
  void judge_start_step(size_t i, size_t j);
  // One step of rank i at step count `step`, slow or not, in its run of slow steps and its flags;
  // the length of the spell it ended (0: none).
  int32_t count_step(size_t i, bool slow, int64_t step);
  // ended_ from every rank's start spells.
  void gather_start_spells();
  // Every per-rank vector sized to n ranks, each rank without a reference.
  void size_to(size_t n);
  // The references before the first decision: every rank calibrating a flat one (see reset()).
  void arm_start(size_t n);

  std::vector<RankTimeModels::Model> reference_;
  std::vector<double> scale_;           // the reference's calibration at the batch in force
  std::vector<double> threshold_;       // factor, or more for a rank whose steps scatter more
  static constexpr double kNoiseZ = 3;  // step-noise standard deviations (log) a slow step exceeds
  std::vector<bool> calibrating_;
  std::vector<std::vector<double>> calibration_;  // measured / reference, first steps at a new batch
  // The most the reference can miss by at the new batch, fitted at the last: the ratio of the two
  // batches (a time between all fixed cost and all per-sample cost); infinite at the first.
  std::vector<double> miss_;
  std::vector<int32_t> batch_;
  std::vector<int64_t> run_start_;  // step of the first slow step of the rank's current run
  std::vector<int32_t> run_steps_;  // slow steps in a row (0: none)
  std::vector<uint8_t> disturbed_;
  std::deque<int64_t> ended_;  // newest first
  int64_t steps_ = 0;
  int32_t startup_left_ = 0;  // start-up steps still to set aside before the first calibration
  // The steps before the first decision, per rank, judged again at each (start references).
  static constexpr size_t kStartSteps = 64;
  std::vector<std::vector<double>> start_times_;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> start_ended_;  // (end step, length) per rank
  std::vector<double> start_level_;    // per rank, the least median of min_steps start steps in a row
  int64_t start_step_ = 0;             // the step count of the first buffered step
  bool start_spells_changed_ = false;  // since ended_ was last gathered from start_ended_
  std::vector<double> newest_;         // scratch: a rank's newest min_steps start steps
};

// What the ended spells that lasted longer than `elapsed` steps had left beyond it: their count
// and mean.
struct SpellOutlook {
  int32_t spells = 0;
  double remaining_steps = 0;
};
SpellOutlook spell_outlook(const std::vector<int64_t>& lengths, int64_t elapsed);

// Holds the plan through spells that the cluster's earlier ones say end too soon to follow.
class ShortSpells {
 public:
  static constexpr int32_t kMinSpells = 3;  // ended spells before any is held

  struct Verdict {
    bool hold = false;
    // The ranks a spell held through slowed, once they are back at their speed (empty otherwise):
    // the plan held through it already fits them, and DynamixPolicy keeps it (docs/AGENT.md item 37).
    std::vector<size_t> ended;
    std::string note;  // with hold: the figures compared, for decisions.jsonl
    bool held_spell_ended() const { return !ended.empty(); }
  };

  void reset();
  // At a decision: whether to keep `current` instead of moving to `next`, where the move takes batch
  // off a rank in a spell (another move does not follow the spell and is not held). `forecast`:
  // each rank's model for the coming steps (BalanceView::forecast); `noise`: the ranks' step noise where the
  // split weighed it (else empty); `switch_cost`: a plan change's cost in steps (SwitchCost);
  // `latency`: steps from a change to the plan that answers it.
  Verdict judge(const SpellWatch& watch, const std::vector<RankTimeModels::Model>& forecast,
                const std::vector<double>& noise, const std::vector<int32_t>& current,
                const std::vector<int32_t>& next, double switch_cost, double latency);
  // True once where a spell held through has outlasted the steps its like had left: its decision
  // is due.
  bool recheck_due(const SpellWatch& watch);
  const std::vector<size_t>& held() const { return held_; }

 private:
  std::vector<size_t> held_;  // ranks whose spell the plan is held through
  int64_t recheck_at_ = -1;   // step count at which a held spell should have ended (-1: none)
};

}  // namespace dynamix
