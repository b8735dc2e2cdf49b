// DYNAMIX — builds the configured BatchPolicy (rank 0); the framework wires agent/ to training.
#pragma once

#include <iostream>
#include <memory>
#include <vector>

#include "agent/batch_policy.h"
#include "framework/config/config.h"

namespace dynamix {

// `log` receives the dynamix policy's start-up lines and PPO updates (nullptr: silent).
std::unique_ptr<BatchPolicy> make_policy(const Config& config, const BatchBounds& bounds,
                                         const std::vector<int32_t>& initial_plan,
                                         std::ostream* log = &std::cout);

}  // namespace dynamix
