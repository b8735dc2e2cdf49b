// DYNAMIX — `dynamix agent eval`: every policy over a suite of simulator scenarios and seeds,
// judged against static and against the best heuristic (proportional, gns) on the same runs.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "agent/sim/sim_runner.h"

namespace dynamix {

struct SuiteScenario {
  std::string name;   // file stem; its prefix names the family (static_, dynamic_, homogeneous_, ...)
  SimRunOptions run;  // cluster, bounds, window, factory (empty: the suite's); policies are the suite's
};

struct SuiteEvalOptions {
  std::vector<SuiteScenario> scenarios;
  std::vector<std::string> policies = {"static", "proportional", "gns", "dynamix"};
  int32_t seeds = 3;      // runs per scenario: sim.seed, sim.seed + 1, ...
  PolicyFactory factory;  // for scenarios without their own; must know every policy named
  std::string output;     // eval.json and eval.csv here (empty: none)
  std::ostream* log = nullptr;
};

// Per scenario and policy, medians over seeds of paired ratios.
struct SuiteRow {
  std::string scenario, policy;
  double time_s = 0;          // time to target (or total time when not reached), median
  double vs_static = 0;       // time / static's time on the same seed, median
  double vs_best = 0;         // time / min(proportional, gns) on the same seed, median
  double ideal_fraction = 0;  // throughput / load-balanced ideal, median
  int32_t reached = 0;        // seeds that reached the target
};

std::vector<SuiteRow> evaluate_suite(const SuiteEvalOptions& options);
// evaluate_suite, the printed tables (per scenario; per policy: median and worst over scenarios,
// median over dynamic_* scenarios, worst over homogeneous_*, median ideal fraction over static_*),
// and the files. Returns the exit code.
int run_suite_eval(const SuiteEvalOptions& options);

}  // namespace dynamix
