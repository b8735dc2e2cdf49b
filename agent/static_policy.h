// DYNAMIX — the `static` baseline: one fixed per-rank plan for the whole run.
#pragma once

#include <string>
#include <vector>

#include "agent/batch_policy.h"

namespace dynamix {

class StaticPolicy : public BatchPolicy {
 public:
  struct Options {
    std::vector<int32_t> batches = {32};  // one value: every rank (uniform); else one per rank
  };

  explicit StaticPolicy(Options options);
  std::string name() const override { return "static"; }
  // The fixed plan, projected onto the state's bounds without a change limit (it never moves
  // afterwards). Throws dynamix::Error when the plan's length does not match the cluster.
  BatchPlan decide(const ClusterState& state) override;

 private:
  Options options_;
};

}  // namespace dynamix
