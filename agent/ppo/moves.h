// DYNAMIX — the dynamix policy's per-rank action set: how far to move toward which proposal.
#pragma once

#include <cstdint>

namespace dynamix {

// A move takes b_i to b_i · (target_i / b_i)^fraction, target_i one of the balanced proposals of
// BalanceView (state_encoder.h): the fitted models' split (slow, smoothed over the history) or the
// same models rescaled by the last window (fast, reacts at once). Hold keeps b_i; the projection
// onto the feasible set (fixed B, bounds, max change per window) follows.
enum Move : int64_t { kHold, kHalfSlow, kSlow, kHalfFast, kFast, kMoves };

struct MoveSpec {
  bool fast;        // which proposal
  double fraction;  // geometric fraction of the way there
};

static_assert(kMoves == 5, "ppo_config.cc validates prior_action against 5 moves");

constexpr MoveSpec kMoveSpecs[kMoves] = {{false, 0.0}, {false, 0.5}, {false, 1.0}, {true, 0.5}, {true, 1.0}};

}  // namespace dynamix
