// DYNAMIX — name -> baseline policy.
#include "agent/baseline_factory.h"

#include "agent/gns_policy.h"
#include "agent/proportional_policy.h"
#include "agent/static_policy.h"
#include "framework/core/error.h"

namespace dynamix {

std::vector<std::string> baseline_policy_names() { return {"static", "proportional", "gns"}; }

std::unique_ptr<BatchPolicy> make_baseline_policy(const std::string& name, const BatchBounds& /*bounds*/,
                                                  const std::vector<int32_t>& init) {
  if (name == "static") return std::make_unique<StaticPolicy>(StaticPolicy::Options{init});
  if (name == "proportional") return std::make_unique<ProportionalPolicy>();
  if (name == "gns") return std::make_unique<GnsPolicy>();
  throw Error("policy.name: unknown baseline policy '" + name +
              "' (expected static, proportional or gns; dynamix is built by the PPO library)");
}

}  // namespace dynamix
