// DYNAMIX — `dynamix sim`: every policy on the same simulated cluster (no MPI).
#include <cstdio>
#include <sstream>

#include "agent/baseline_factory.h"
#include "agent/sim/sim_config.h"
#include "agent/sim/sim_runner.h"
#include "framework/cli/commands.h"
#include "framework/config/config.h"
#include "framework/core/error.h"
#include "framework/train/policy_factory.h"

namespace dynamix {

int run_sim_command(const SimCommand& cmd) {
  try {
    const Config config = load_config(cmd.config, cmd.overrides);
    DYNAMIX_CHECK(!config.sim_yaml.empty(), cmd.config + ": no 'sim' block (see configs/sim_*.yaml)");
    SimRunOptions o;
    o.config = parse_sim_config(config.sim_yaml, cmd.config);
    const int nodes = o.config.nodes;
    validate_for_world(config, nodes);
    o.initial_plan = initial_batches(config, nodes);
    o.bounds.min = config.batch.min;
    o.bounds.max.assign(static_cast<size_t>(nodes), config.batch.max);
    o.bounds.fixed_global = config.batch.global == "fixed";
    o.bounds.global_batch = 0;
    for (int32_t b : o.initial_plan) o.bounds.global_batch += b;
    o.window = config.policy.window;
    o.output_dir = config.output.dir;
    if (!cmd.policies.empty()) o.policies = cmd.policies;
    o.factory = [config](const std::string& name, const BatchBounds& bounds, const std::vector<int32_t>& init) {
      Config c = config;
      c.policy.name = name;
      return make_policy(c, bounds, init);
    };
    return run_sim(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dynamix: error: %s\n", brief_error(e).c_str());
    return 2;
  }
}

}  // namespace dynamix
