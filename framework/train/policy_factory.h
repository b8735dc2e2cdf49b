// DYNAMIX — builds the configured BatchPolicy (rank 0); the framework wires agent/ to training.
#pragma once

#include <iostream>
#include <memory>
#include <vector>

#include "agent/batch_policy.h"
#include "framework/config/config.h"

namespace dynamix {

// The batch limits of `config` for a run starting at `initial_plan` (one entry per rank): batch.min,
// batch.max on every rank, batch.multiple, and B fixed at the plan's sum or adaptive from it.
BatchBounds config_bounds(const Config& config, const std::vector<int32_t>& initial_plan);

// `log` receives the dynamix policy's start-up lines and PPO updates (nullptr: silent).
std::unique_ptr<BatchPolicy> make_policy(const Config& config, const BatchBounds& bounds,
                                         const std::vector<int32_t>& initial_plan,
                                         std::ostream* log = &std::cout);

}  // namespace dynamix
