// DYNAMIX — a simulator run's options from a config file (YAML `sim` block + batch/policy/output),
// shared by `dynamix sim` and `dynamix agent eval`.
#pragma once

#include <iostream>
#include <string>
#include <vector>

#include "agent/sim/sim_runner.h"
#include "framework/config/config.h"

namespace dynamix {

// Throws dynamix::Error naming the file and key on a bad config. `config_out` (optional) receives
// the loaded config (the policy factory needs it).
SimRunOptions sim_options_from_file(const std::string& path, const std::vector<std::string>& overrides,
                                    Config* config_out = nullptr);
// make_policy for every named policy with this config's policy block; `log` as in make_policy.
PolicyFactory config_policy_factory(const Config& config, std::ostream* log = &std::cout);

}  // namespace dynamix
