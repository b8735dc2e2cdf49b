// DYNAMIX — `dynamix sim` (every policy on one simulated cluster) and `dynamix agent eval` (every
// policy over a scenario suite); no MPI.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "agent/sim/sim_config.h"
#include "agent/sim/sim_runner.h"
#include "agent/sim/suite_eval.h"
#include "framework/cli/commands.h"
#include "framework/cli/sim_options.h"
#include "framework/core/error.h"
#include "framework/train/policy_factory.h"

namespace dynamix {

SimRunOptions sim_options_from_file(const std::string& path, const std::vector<std::string>& overrides,
                                    Config* config_out) {
  const Config config = load_config(path, overrides);
  DYNAMIX_CHECK(!config.sim_yaml.empty(), path + ": no 'sim' block (see configs/sim_*.yaml)");
  SimRunOptions o;
  o.config = parse_sim_config(config.sim_yaml, path);
  const int nodes = o.config.nodes;
  validate_for_world(config, nodes);
  DYNAMIX_CHECK(!config.policy.shadow,
                path +
                    ": policy.shadow is for dynamix train (a simulated run that keeps its "
                    "plan is static's): remove it here");
  DYNAMIX_CHECK(
      config.policy.replay.empty(),
      path +
          ": policy.replay is for dynamix train (it replays a run's decisions.jsonl on a real run): "
          "remove it here");
  o.initial_plan = initial_batches(config, nodes);
  o.bounds = config_bounds(config, o.initial_plan);
  o.window = config.policy.window;
  o.output_dir = config.output.dir;
  o.factory = config_policy_factory(config);
  if (config_out) *config_out = config;
  return o;
}

PolicyFactory config_policy_factory(const Config& config, std::ostream* log) {
  return [config, log](const std::string& name, const BatchBounds& bounds, const std::vector<int32_t>& init) {
    Config c = config;
    c.policy.name = name;
    return make_policy(c, bounds, init, log);
  };
}

int run_sim_command(const SimCommand& cmd) {
  try {
    SimRunOptions o = sim_options_from_file(cmd.config, cmd.overrides);
    if (!cmd.policies.empty()) o.policies = cmd.policies;
    return run_sim(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dynamix: error: %s\n", brief_error(e).c_str());
    return 2;
  }
}

int run_agent_eval_command(const AgentEvalCommand& cmd) {
  namespace fs = std::filesystem;
  try {
    DYNAMIX_CHECK(fs::is_directory(cmd.suite), "agent eval: --suite '" + cmd.suite + "' is not a directory");
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(cmd.suite)) {
      if (entry.path().extension() == ".yaml") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    DYNAMIX_CHECK(!files.empty(), "agent eval: no *.yaml scenarios in '" + cmd.suite + "'");
    SuiteEvalOptions o;
    for (const fs::path& f : files) {
      Config config;
      SimRunOptions run = sim_options_from_file(f.string(), cmd.overrides, &config);
      run.factory = config_policy_factory(config, nullptr);  // one table, not a policy banner per run
      o.scenarios.push_back({f.stem().string(), std::move(run)});
    }
    o.policies = cmd.policies;
    o.seeds = cmd.seeds;
    o.output = cmd.output;
    return run_suite_eval(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dynamix: error: %s\n", brief_error(e).c_str());
    return 2;
  }
}

}  // namespace dynamix
