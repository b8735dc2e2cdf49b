// DYNAMIX — one decision window as the rank models see it, for the agent's unit tests.
#pragma once

#include <cstdint>
#include <vector>

#include "agent/cluster_state.h"

namespace dynamix {

// A window of `steps` steps ending at step `end`: rank i at batch b[i], its compute time
// slow[i]·(alpha + beta·b[i]) with the simulator's default alpha and beta, and its last quarter
// recent[i] times that base (default: as the mean).
inline ClusterState model_window(int64_t end, const std::vector<int32_t>& b, const std::vector<double>& slow,
                                 const std::vector<double>& recent = {}, int32_t steps = 10) {
  ClusterState s;
  s.global.step = end;
  s.bounds.min = 1;
  s.bounds.max = {1024};
  for (size_t i = 0; i < b.size(); ++i) {
    NodeRecord r;
    r.rank = int32_t(i);
    r.batch_size = b[i];
    r.steps = steps;
    const double base = 0.004 + 0.0004 * b[i];
    r.compute_s = slow[i] * base;
    r.compute_recent_s = (recent.empty() ? slow[i] : recent[i]) * base;
    r.compute_rel_se = 0.01;
    s.nodes.push_back(r);
  }
  return s;
}

}  // namespace dynamix
