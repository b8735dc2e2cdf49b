// DYNAMIX — policy factory: baselines from agent/, the PPO agent from agent/ppo/.
#include "framework/train/policy_factory.h"

#include <numeric>

#include "agent/baseline_factory.h"
#include "agent/ppo/default_policy.h"
#include "agent/ppo/dynamix_policy.h"
#include "framework/core/error.h"

namespace dynamix {

BatchBounds config_bounds(const Config& config, const std::vector<int32_t>& initial_plan) {
  BatchBounds b;
  b.min = config.batch.min;
  b.max.assign(initial_plan.size(), config.batch.max);
  b.multiple = config.batch.multiple;
  b.fixed_global = config.batch.global == GlobalBatch::kFixed;
  b.global_batch = std::accumulate(initial_plan.begin(), initial_plan.end(), 0);
  return b;
}

std::unique_ptr<BatchPolicy> make_policy(const Config& config, const BatchBounds& bounds,
                                         const std::vector<int32_t>& initial_plan, std::ostream* log) {
  if (config.policy.name == "dynamix") {
    DynamixOptions o;
    o.learn = config.policy.learn;
    if (config.policy.min_move_gain) o.min_move_gain = *config.policy.min_move_gain;
    std::string unknown;  // names are checked when the config is read
    DYNAMIX_CHECK(o.rules.turn_off(config.policy.rules_off, &unknown),
                  "policy.rules_off: no rule named " + unknown);
    // No checkpoint: the shipped policy; "none": learn from scratch.
    if (config.policy.checkpoint.empty()) {
      o.archive = default_policy_archive();
      o.archive_name = kDefaultPolicyName;
      DYNAMIX_CHECK(!o.archive.empty(), std::string("policy.checkpoint: this build has no ") +
                                            kDefaultPolicyName +
                                            "; give a policy file or 'none' (learn from scratch)");
    } else if (config.policy.checkpoint != "none") {
      o.checkpoint = config.policy.checkpoint;
    } else {
      DYNAMIX_CHECK(o.learn, "policy.checkpoint: 'none' (an untrained policy) needs policy.learn: true");
    }
    o.log = log;  // hyper-parameters at start, one line per PPO update
    return std::make_unique<DynamixPolicy>(o);
  }
  return make_baseline_policy(config.policy.name, bounds, initial_plan);
}

}  // namespace dynamix
