// DYNAMIX — the state's features by domain, and removing whole domains from a policy's view
// (`dynamix agent pretrain --ablate`), for the ablation table in docs/AGENT.md.
#pragma once

#include <string>
#include <vector>

#include "agent/ppo/state_encoder.h"

namespace dynamix {

enum class FeatureGroup { kBalance, kTiming, kMemory, kSystem, kNetwork, kStatistics };

// "balance", "timing", "memory", "system", "network", "statistics".
const std::vector<std::string>& feature_group_names();
FeatureGroup node_feature_group(NodeFeature f);
FeatureGroup global_feature_group(GlobalFeature f);

// Throws dynamix::Error naming the entry when a name is not a feature group or appears twice.
void check_feature_groups(const std::vector<std::string>& groups);

// Sets every feature of the named groups to 0 (rows and global), so the policy cannot use them.
void ablate_features(EncodedState& state, const std::vector<std::string>& groups);

}  // namespace dynamix
