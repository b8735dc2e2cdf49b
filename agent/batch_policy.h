// DYNAMIX — the BatchPolicy seam: static, proportional, gns and dynamix (PPO) share it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agent/cluster_state.h"

namespace dynamix {

class BatchPolicy {
 public:
  virtual ~BatchPolicy() = default;
  virtual std::string name() const = 0;
  // Called on rank 0 every decision window. Must return a plan inside state.bounds.
  virtual BatchPlan decide(const ClusterState& state) = 0;
  // Called on rank 0 after every step with each rank's compute time in that step, under the plan
  // decide() returned last. True asks for a decision before the window ends: the trainer and the
  // simulator take it after the next step (the request travels with that step's exchange), then
  // go on deciding at the window's regular steps. The heuristics decide once per window.
  virtual bool wants_decision(const std::vector<double>& /*compute_s*/) { return false; }
  // decisions.jsonl's label for a decision at `step`: "window" on the regular grid, "change" when
  // wants_decision brought it forward.
  static const char* trigger(int64_t step, int64_t window) {
    return step % window == 0 ? "window" : "change";
  }
  // Opaque policy state saved in training checkpoints (empty for stateless policies).
  virtual std::string save_state() const { return {}; }
  virtual void load_state(const std::string& /*blob*/) {}
};

}  // namespace dynamix
