// DYNAMIX — builds the configured BatchPolicy (rank 0); the framework wires agent/ to training.
#pragma once

#include <memory>
#include <vector>

#include "agent/batch_policy.h"
#include "framework/config/config.h"

namespace dynamix {

std::unique_ptr<BatchPolicy> make_policy(const Config& config, const BatchBounds& bounds,
                                         const std::vector<int32_t>& initial_plan);

}  // namespace dynamix
