// DYNAMIX — `dynamix sim`: every policy on the same simulated cluster and seed, a comparison table,
// and per-policy outputs (summary.json, decisions.jsonl, sim_windows.jsonl) under output_dir/<policy>/.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "agent/batch_policy.h"
#include "agent/sim/cluster_simulator.h"
#include "agent/sim/sim_config.h"

namespace dynamix {

using PolicyFactory = std::function<std::unique_ptr<BatchPolicy>(
    const std::string& name, const BatchBounds& bounds, const std::vector<int32_t>& init)>;

struct SimRunOptions {
  SimConfig config;
  std::vector<std::string> policies = {"static", "proportional", "gns"};
  PolicyFactory factory;              // empty: make_baseline_policy (no dynamix)
  BatchBounds bounds;                 // from the `batch` block: min, max (1 or per rank), global
  std::vector<int32_t> initial_plan;  // batch.init: one value or one per rank
  int64_t window = 20;                // policy.window
  std::string output_dir;             // empty: no files written
  std::ostream* log = nullptr;        // the table; nullptr = std::cout
};

struct SimPolicyResult {
  std::string policy;
  SimTotals totals;
  int64_t windows = 0;
};

// Runs the policies one after the other; throws dynamix::Error on bad options or output paths.
std::vector<SimPolicyResult> run_sim_policies(const SimRunOptions& options);
// run_sim_policies plus the printed table; returns the process exit code (0 on success).
int run_sim(const SimRunOptions& options);

}  // namespace dynamix
