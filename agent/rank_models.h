// DYNAMIX — per-rank compute-time models t_i(b) = alpha_i + beta_i·b fitted from the decision
// windows, with change detection, and the equal-finish-time split of a global batch.
// Shared by the gns baseline and the dynamix agent: what "the balanced plan" means in one place.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "agent/cluster_state.h"

namespace dynamix {

class RankTimeModels {
 public:
  struct Options {
    int32_t history = 16;           // (b_i, compute_s) observations kept per rank
    double forget = 0.8;            // weight of an observation per window of age
    double change_threshold = 0.5;  // relative misprediction that restarts a rank's model (slowdowns)
    // On a restart, start from the window's last quarter (compute_recent_s) instead of its mean:
    // a change inside a window leaves a mean half-way between before and after, and a model that
    // keeps that mean lags the change by one more window.
    bool restart_at_recent = false;
    // Keep score of two forecasts of each window: the model as fitted before it, and the model
    // rescaled to the window before (persistence). Under steady speeds the model wins (it averages
    // noise away); under drifting speeds it lags and persistence wins (see tracking()).
    bool score_persistence = false;
    // Spells of a few steps (docs/AGENT.md item 24): a model one window old after a restart is
    // judged too, by that window's last quarter (a recovery one window after a slowdown was not
    // seen until a second window), and a rank whose change undoes at least half of its last
    // slowdown resumes its history from before that slowdown (a fresh model fitted at the small
    // batch the slowdown left it read the batch's fixed cost as slowness and kept it there); a
    // spell's end that SpellWatch saw counts as such a change inside the threshold too
    // (spell_returned, item 26).
    bool spells = false;
    // A change of speed under the restart threshold still restarts a model of 4 windows or more
    // where the window is level (its last quarter agrees with its mean) and misses by more than
    // 1.2x (window-to-window wander) beyond 3 standard errors of its mean and beyond the batch's
    // ratio to the last window's (a one-batch model's extrapolation), and not while tracking
    // (drifting speeds are followed there; restarts would leave its forecasts unscored). A rank
    // alternating between 1x and 1.6x for phases of 80-180 steps was read as one blended speed,
    // its model moving a fifth of the way per window (docs/AGENT.md item 28).
    bool level_shifts = false;
  };
  // Predicted mean compute time of one rank: t(b) = alpha + beta·b (seconds).
  struct Model {
    double alpha = 0, beta = 0;
    bool valid = false;
    double at(double b) const { return alpha + beta * b; }
  };
  // What the last window told about a rank, all relative (no unit survives).
  struct Reading {
    double surprise = 1;     // measured / predicted by the model before this window (1: no model)
    bool restarted = false;  // the misprediction exceeded change_threshold: history cleared
    bool resumed = false;    // with restarted: back from a slowdown, its history from before resumed
    double residual = 0;     // weighted RMS of measured/predicted - 1 over the kept history
    int32_t observations = 0;
    // Step-to-step scatter of the rank's compute time: the relative standard deviation per step
    // of the median window in the kept history (0: unknown), and the steps behind it in units of
    // a mean's (a median needs pi/2 times the steps), for its standard error.
    double step_noise = 0;
    double noise_steps = 0;
  };
  // A restart of one rank's model: the step count of the window that showed the change, whether
  // the rank got slower, and the model it replaced (the speed before the change).
  struct Restart {
    int64_t step = 0;
    bool slower = false;
    Model before;
  };
  static constexpr size_t kRestartLog = 6;  // restarts kept per rank, newest last

  RankTimeModels();
  explicit RankTimeModels(Options options);

  // Adds one window's (b_i, compute_s) per rank; a change of cluster size starts over.
  // `spells` (optional, flags per rank, SpellWatch::disturbed): within this window a spell of
  // slow steps was seen (kSpellSeen), began (kSpellBegan), or ended with the rank at its speed
  // since (kSpellEnded). Such a window's mean is neither the speed before nor after: unless it
  // restarts the model, it is not fitted, and its forecast is not scored (a burst's window read as
  // wandering speeds raised the move floor and turned tracking on). A slowdown over by the window's
  // end does not restart the model (followed, it left a rank at a third of its share).
  static constexpr uint8_t kSpellSeen = 1, kSpellBegan = 2, kSpellEnded = 4;
  // `alarmed` (optional, one flag per rank): the change alarm reported the rank's change inside
  // this window, late in it perhaps: its misprediction is read by the window's last quarter
  // (compute_recent_s), as a model one window old after a restart is.
  void observe(const ClusterState& state, const std::vector<uint8_t>* spells = nullptr,
               const std::vector<bool>* alarmed = nullptr);
  bool ready() const;  // every rank has a valid model
  void reset();

  const std::vector<Model>& models() const { return models_; }
  const std::vector<Reading>& readings() const { return readings_; }
  // Rank i's last kRestartLog restarts (empty before observe()).
  const std::deque<Restart>& restarts(size_t i) const { return restarts_[i]; }
  // Rank i's last restart was a slowdown: it is slower than before it, not back yet.
  bool in_slowdown(size_t i) const { return !restarts_[i].empty() && restarts_[i].back().slower; }
  // Rank i's model is the proportional prior t = beta·b (no fixed cost determined) and `batch` is
  // at or above its kept history's batches (their weighted Σb²/Σb): there the model's forecast is
  // an upper bound on the rank's time for any fixed cost >= 0.
  bool prior_bounds_growth(size_t i, double batch) const;
  int32_t history() const { return options_.history; }
  double forget() const { return options_.forget; }
  // True when the last window, not the history, predicts the next one: over at least
  // kTrackingWindows windows (forgetting weights), persistence's squared log error is under
  // kTrackingShare of the model's, pooled over the ranks. Steady noise gives persistence about 1.6
  // times the model's error; a lag of a drifting speed makes the model's grow. Needs score_persistence.
  bool tracking() const;
  // RMS log error of persistence's forecasts per rank and window, forgetting-weighted (0: none
  // scored yet): how far the last window's level misses the next one.
  double persistence_rms() const;
  // RMS log error of the models' own forecasts per rank and window beyond what the ranks' step
  // noise explains (the window mean's and the fit's sampling error), forgetting-weighted; NaN
  // before kTrackingWindows scored windows. Near 0 where speeds hold still between windows (the
  // simulator's stationary ranks); 5-10 % on this project's 2-core VM, whose ranks share cores
  // and trade speed from window to window (docs/AGENT.md item 22).
  double excess_forecast_rms() const;
  static constexpr int32_t kTrackingWindows = 6;
  static constexpr double kTrackingShare = 0.7;

  // Continuous split of B over the ranks with equal predicted compute time, each b_i in
  // [lo_i, hi_i]; `scale` (optional, one factor per rank) multiplies a rank's model. Fills b and
  // returns the predicted compute time max_i t_i(b_i).
  double split(double global_batch, const std::vector<double>& lo, const std::vector<double>& hi,
               std::vector<double>& b, const std::vector<double>* scale = nullptr) const;

 private:
  struct Observation {
    double batch, seconds;
    double count = 1;  // the steps its time is the mean of (a restart's: its last quarter's)
    // The window's per-step relative variance of compute time, where its scatter is step noise (not
    // a restart window's, which mixes the before and the after; 2 steps or more): else unknown.
    bool scatter = false;
    double rel_var = 0;
    bool after_restart = false;  // the window that restarted the model
  };
  // The weight of obs[k] in a fit: its age's (forget^age) times its steps against the most steps
  // any kept window has, so that a window cut short by a decision weighs as little as it tells.
  std::vector<double> fit_weights(const std::deque<Observation>& obs) const;
  void read_step_noise(const std::deque<Observation>& obs, Reading& reading) const;
  // Rank i's last restart was a slowdown, and a time t at `batch` undoes at least half of it.
  bool undoes_slowdown(size_t i, double batch, double predicted, double t) const;
  // A window in which SpellWatch saw rank i's spell end is its return where the window's last
  // quarter (after the end) undoes half the slowdown beyond the quarter's noise, inside the
  // restart threshold too: the model of a 2.5x spell's speed, fitted through the origin at 32
  // samples and read at the 18 the spell left the rank at, missed the return by 0.49, and the rank
  // stayed at 18 for 50 steps and more (docs/AGENT.md item 26).
  bool spell_returned(size_t i, const NodeRecord& r, double predicted) const;
  // Options::level_shifts: rank i's window is off its model's `predicted` time by a change of
  // speed, not by step noise, wander or the model's shape.
  bool level_shift(size_t i, const NodeRecord& r, double predicted) const;
  Model fit(const std::deque<Observation>& obs) const;
  double residual(const std::deque<Observation>& obs, const Model& m) const;

  Options options_;
  std::vector<double> age_weight_;         // forget^age, age 0 .. history - 1 (the newest weighs 1)
  std::vector<double> effective_windows_;  // of a fit over k = 0 .. history windows
  std::vector<std::deque<Observation>> history_;
  std::vector<Model> models_;
  std::vector<Reading> readings_;
  std::vector<std::deque<Restart>> restarts_;
  std::vector<std::deque<Observation>> before_slowdown_;  // each rank's history at its last slowdown
  // Persistence scoring: each rank's log(measured / model) of its newest window after the fit
  // (NaN: none), and forgetting-weighted sums of both forecasts' mean squared log error.
  void score_forecasts(const ClusterState& state, const std::vector<uint8_t>* spells);
  // Expected squared log error of a rank's model forecast from noise alone, for a window of `steps`.
  double forecast_noise_variance(const Reading& reading, int32_t steps) const;
  double forgetting_weights() const;  // sum of forget^age over the scored windows
  std::vector<double> last_log_ratio_;
  double model_error_ = 0, persistence_error_ = 0, noise_error_ = 0;
  int32_t scored_windows_ = 0;
};

// RankTimeModels::split over any models (one per rank): the same equal-finish-time split.
double split_batch(const std::vector<RankTimeModels::Model>& models, double global_batch,
                   const std::vector<double>& lo, const std::vector<double>& hi, std::vector<double>& b,
                   const std::vector<double>* scale = nullptr);

// Per-rank batch bounds [max(1, b_min), b_max_i] as doubles, for split().
void rank_bounds(const BatchBounds& bounds, size_t ranks, std::vector<double>& lo, std::vector<double>& hi);

// The global batch maximizing goodput B / (t(B) + overhead) · E(B), with t(B) the balanced split's
// predicted compute time and E(B) ∝ 1/(B_noise + B), searched over what one window may reach
// (bounds.max_change around `current`) and not below the initial B (bounds.global_batch when the
// global batch is adaptive, or `current` if that is lower): a geometric grid, then golden-section
// refinement. Returns `current` unless the best beats it by more than min_gain (relative).
double goodput_batch(const RankTimeModels& models, const BatchBounds& bounds, double current,
                     double overhead_s, double noise_scale, double min_gain, int32_t grid = 48);

}  // namespace dynamix
