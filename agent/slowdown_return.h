// DYNAMIX — the plan to go back to when a followed slowdown is over (docs/AGENT.md item 25).
//
// Following a slowdown moves batch off the slowed ranks; when they are back, the split of the
// models' return lands a sample or two off the plan held before (their noise), and the move floor
// then keeps that for the rest of a run (a real run kept [32, 33, 31, 32] for 370 steps). This
// keeps the plan in force before a decision that followed some ranks' slowdown, and offers it back
// once every rank whose slowdown was followed is back, until the plan settles; whether it is taken
// is the policy's judgement (DynamixPolicy, the move floor).
#pragma once

#include <cstdint>
#include <vector>

#include "agent/rank_models.h"

namespace dynamix {

class SlowdownReturn {
 public:
  void reset();
  // After a decision that moved `current` to `next`. A move that takes batch off a rank in a
  // slowdown (its models' last restart was slower) follows that slowdown, whenever the restart
  // came: with the decision an alarm asked for, or windows before, while the plan was held (a real
  // run held a spell, moved at the next regular decision when it outlasted its like, and its
  // return kept [33, 32, 32, 31] for 200 steps; docs/AGENT.md item 26).
  void decided(const RankTimeModels& models, const std::vector<int32_t>& current,
               const std::vector<int32_t>& next);
  // The plan before the slowdown, once every rank it slowed is back (nullptr: none to offer).
  const std::vector<int32_t>* offer(const RankTimeModels& models) const;
  // The ranks whose slowdowns were followed since the plan before (one flag per rank; empty: none).
  const std::vector<bool>& slowed() const { return slowed_; }

 private:
  bool ranks_back(const RankTimeModels& models) const;

  std::vector<int32_t> before_;  // the plan before a followed slowdown (empty: none)
  std::vector<bool> slowed_;     // the ranks whose slowdowns were followed since
};

}  // namespace dynamix
