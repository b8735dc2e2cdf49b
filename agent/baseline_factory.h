// DYNAMIX — builds the non-learning policies by name: static, proportional, gns.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/batch_policy.h"

namespace dynamix {

// `init` is the initial plan (one value or one per rank); static keeps it for the whole run.
// Throws dynamix::Error naming the valid names for anything else (dynamix lives in agent/ppo).
std::unique_ptr<BatchPolicy> make_baseline_policy(const std::string& name, const BatchBounds& bounds,
                                                  const std::vector<int32_t>& init);
std::vector<std::string> baseline_policy_names();

}  // namespace dynamix
