// DYNAMIX — policy factory: baselines from agent/, the PPO agent from agent/ppo/.
#include "framework/train/policy_factory.h"

#include <iostream>

#include "agent/baseline_factory.h"
#include "agent/ppo/dynamix_policy.h"

namespace dynamix {

std::unique_ptr<BatchPolicy> make_policy(const Config& config, const BatchBounds& bounds,
                                         const std::vector<int32_t>& initial_plan) {
  if (config.policy.name == "dynamix") {
    DynamixOptions o;
    o.learn = config.policy.learn;
    o.checkpoint = config.policy.checkpoint;
    o.log = &std::cout;  // hyper-parameters at start, one line per PPO update
    return std::make_unique<DynamixPolicy>(o);
  }
  return make_baseline_policy(config.policy.name, bounds, initial_plan);
}

}  // namespace dynamix
