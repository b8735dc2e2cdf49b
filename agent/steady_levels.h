// DYNAMIX — each rank's compute time over all the windows since its speed or batch last changed,
// for telling ranks that differ a little from equal ones under heavy step noise.
//
// The rank models forget (0.8 a window), so the homogeneous hold judges ranks by about five
// windows: with 30 % step noise and 5-step windows a level's standard error is about 6 %, and
// ranks 15 % apart passed for equal and were held at the even split for a whole run (random suite
// 32, static_r013: 1.015x gns's time; the same policy without the hold 0.982x gns's). Speeds that
// hold still are measured better by every window since they last changed: this keeps, per rank,
// the running mean and scatter of log(compute time) over such windows, and says when the ranks'
// means differ beyond that scatter.
#pragma once

#include <cstdint>
#include <vector>

#include "agent/cluster_state.h"
#include "agent/rank_models.h"
#include "framework/core/stats.h"

namespace dynamix {

class SteadyLevels {
 public:
  // Windows a rank needs at one batch, since its last change, before its mean is compared: the
  // scatter that judges it is estimated from them too.
  static constexpr int64_t kMinWindows = 8;
  // The test runs every window and a finding stays, so its false alarms among equal ranks would
  // pile up over a long run: its bar is one standard deviation above the models' hold
  // (extremes_z(n) + 1), and each rank's scatter is taken as no less than the ranks' median. Equal
  // ranks at 30 % step noise, 100 runs of 400 5-step windows each at 2, 4, 7, 16 and 64 ranks:
  // 1 alarm in 500 runs (at extremes_z(n) with each rank's own scatter, 10 in 100 on 4 ranks and
  // on 16); 7 ranks 15 % apart are found after 20 windows (median of 50 runs), 2 ranks 10 % apart
  // after 42.
  static constexpr double kExtraZ = 1;
  // And some rank's level must lie this far (log scale) from the ranks' weighted mean: a few
  // percent between equal real ranks that share cores lasts for a whole run on this project's VM
  // (docs/AGENT.md, items 12 and 19), where a move gains less than it costs.
  static constexpr double kMinGap = 0.05;

  void reset() {
    ranks_.clear();
    apart_ = false;
  }
  // One decision window. A rank starts over where its model restarted (a change of speed: the
  // window mixes both speeds and is left out) or its batch changed (a fixed cost makes levels at
  // two batches incomparable); a window in which SpellWatch saw a spell (`disturbed`, one flag per
  // rank, may be empty) is left out without starting over.
  void observe(const ClusterState& state, const RankTimeModels& models,
               const std::vector<uint8_t>& disturbed);
  // The ranks were found apart: every rank ran the same batch for kMinWindows windows or more and
  // their mean levels differed beyond what each one's window-to-window scatter explains (a
  // chi-square over the ranks at extremes_z(n) + kExtraZ standard deviations, each scatter widened
  // for the windows it was estimated from), with some rank kMinGap off their weighted mean. It stays so,
  // through the plan changes that follow, until some rank's model restarts: only a change of speed makes them
  // equal again.
  bool apart() const { return apart_; }

 private:
  struct Rank {
    int32_t batch = 0;
    RunningMean level;  // of log(compute_s), one value per window
  };
  bool levels_differ() const;
  std::vector<Rank> ranks_;
  bool apart_ = false;
};

}  // namespace dynamix
