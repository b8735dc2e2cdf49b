// DYNAMIX — the pretrained policy shipped in the repository (agent/ppo/default_policy.pt), embedded
// in the binary at build time so `policy.name: dynamix` needs no file path. Rebuilt bit for bit by
// `dynamix agent pretrain` with the arguments in docs/AGENT.md ("Shipped policy").
#pragma once

#include <string>

namespace dynamix {

// The policy archive's bytes (empty when the build found no shipped file).
std::string default_policy_archive();
// Where it came from, for messages.
constexpr const char* kDefaultPolicyName = "the shipped default policy (agent/ppo/default_policy.pt)";

}  // namespace dynamix
