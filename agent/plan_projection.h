// DYNAMIX — projection of a desired (real-valued) batch plan onto the feasible integer set.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/cluster_state.h"

namespace dynamix {

// Returns integers b_i with, in order of priority:
//  1. b.min <= b_i <= b.max[i] (hard: memory); never 0;
//  2. when b.fixed_global, sum b_i == b.global_batch (a proportional fit that respects every
//     rank's bounds, rounded so that the largest b_i / fit_i is smallest: the leftover units go
//     to the ranks they enlarge least, relatively); when the hard bounds cannot reach it, the
//     closest feasible sum and a note saying so;
//  3. |b_i - current_i| <= b.max_change * current_i (0 = unlimited), always allowing a step of 1;
//     relaxed (with a note) only when the fixed global batch cannot be met otherwise.
// With b.multiple k > 1 all of this holds in units of k samples: every b_i a multiple of k, within
// [ceil(min/k)·k, floor(max_i/k)·k], and a fixed B not a multiple of k rounded to the nearest one
// (with a note); a step of k is always allowed.
// Non-finite desired entries mean "keep current"; negative or zero ones go to the lower bound.
// b.max may be empty (no upper bound) or hold one value for every rank.
// `centre`, when given, moves rule 3's band: |b_i - centre_i| <= b.max_change * centre_i, and a
// non-finite or non-positive centre_i leaves rank i unlimited (a rank whose speed changed).
// Throws dynamix::Error when desired, current or centre differ in length or b.max has a wrong
// length.
BatchPlan project_plan(std::vector<double> desired, const std::vector<int32_t>& current, const BatchBounds& b,
                       const std::vector<double>* centre = nullptr);

// Upper bound of rank i under b (b.max empty = unbounded, one value = every rank).
int32_t rank_max(const BatchBounds& b, size_t i);

// The smallest batch any plan under b gives a rank: b.min (at least 1) rounded up to b.multiple.
int32_t least_batch(const BatchBounds& b);

// Whether `plan` gives each of `world` ranks a batch within b's limits (b.min, the rank's max, a
// multiple of b.multiple); where not, *why names the first rank out and the limit it breaks. The
// global batch is not checked: where the limits cannot reach a fixed B, projection gives another.
bool plan_within(const std::vector<int32_t>& plan, const BatchBounds& b, size_t world, std::string* why);

}  // namespace dynamix
