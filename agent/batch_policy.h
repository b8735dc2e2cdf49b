// DYNAMIX — the BatchPolicy seam: static, proportional, gns and dynamix (PPO) share it.
#pragma once

#include <memory>
#include <string>

#include "agent/cluster_state.h"

namespace dynamix {

class BatchPolicy {
 public:
  virtual ~BatchPolicy() = default;
  virtual std::string name() const = 0;
  // Called on rank 0 every decision window. Must return a plan inside state.bounds.
  virtual BatchPlan decide(const ClusterState& state) = 0;
  // Opaque policy state saved in training checkpoints (empty for stateless policies).
  virtual std::string save_state() const { return {}; }
  virtual void load_state(const std::string& /*blob*/) {}
};

}  // namespace dynamix
