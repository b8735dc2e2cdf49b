// DYNAMIX — `dynamix agent pretrain`: PPO in the cluster simulator over randomized clusters.
#include <cstdio>

#include "agent/ppo/pretrain.h"
#include "framework/cli/commands.h"

namespace dynamix {

int run_pretrain_command(const PretrainCommand& cmd) {
  try {
    PretrainOptions o;
    o.episodes = cmd.episodes;
    o.seed = cmd.seed;
    o.min_nodes = cmd.min_nodes;
    o.max_nodes = cmd.max_nodes;
    o.output = cmd.output;
    o.checkpoint = cmd.checkpoint;
    return run_pretrain(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dynamix: error: %s\n", brief_error(e).c_str());
    return 2;
  }
}

}  // namespace dynamix
