// DYNAMIX — `dynamix agent pretrain`: PPO in the cluster simulator over randomized clusters.
#include <cstdio>

#include "agent/ppo/pretrain.h"
#include "framework/cli/commands.h"

namespace dynamix {

int run_pretrain_command(const PretrainOptions& options) {
  try {
    return run_pretrain(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dynamix: error: %s\n", brief_error(e).c_str());
    return 2;
  }
}

}  // namespace dynamix
