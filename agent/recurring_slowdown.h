// DYNAMIX — interference that keeps coming back: plan for its slow phase when following each phase
// costs more.
//
// A rank whose model restarted slower then faster three times over (RankTimeModels::restarts) is
// under recurring interference: another job's bursts, a periodic checkpoint or data load on a
// shared node. Following every phase costs about `latency_steps` steps of the wrong plan at each
// switch (the steps a change takes to reach a decision); keeping the slow phase's plan through the
// fast phase costs the other ranks' extra load for the fast phase's length. With D the longer of
// the last two fast phases, ΔF the held plan's extra compute time per step under fast speeds and
// ΔS the followed plan's extra time per step when the slow phase returns, holding costs
// (D - L)·ΔF per cycle more than following, and following costs L·ΔS more than holding: hold when
// the first is smaller.
// Two of 16 ranks 3x slower for 20 of every 40 steps: holding takes 0.91x the time of
// following (configs/experiments/sim_fast_periodic.yaml); half the ranks slowed for long phases:
// following (docs/AGENT.md item 16).
#pragma once

#include <cstdint>
#include <vector>

#include "agent/cluster_state.h"
#include "agent/rank_models.h"

namespace dynamix {

struct RecurringHedge {
  bool recurring = false;    // some rank shows recurring interference and is in its fast phase
  bool hold = false;         // holding its slow phase's plan is the cheaper way through a cycle
  std::vector<double> plan;  // with hold: the split of B balanced for the slow phase (else empty)
  double hold_cost = 0, follow_cost = 0;  // compute seconds per cycle, as compared
};

// The hedge at this decision (after models.observe(state)): lo/hi the ranks' batch bounds,
// `latency_steps` the steps from a change to the plan that answers it.
RecurringHedge hedge_recurring(const ClusterState& state, const RankTimeModels& models, double global_batch,
                               const std::vector<double>& lo, const std::vector<double>& hi,
                               double latency_steps);

}  // namespace dynamix
