// DYNAMIX — feature domains of the dynamix state and their ablation.
#include "agent/ppo/feature_groups.h"

#include <algorithm>

#include "framework/core/error.h"

namespace dynamix {
namespace {

FeatureGroup group_of(const std::string& name) {
  const auto& names = feature_group_names();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw Error("ablate: unknown feature group '" + name + "' (expected " + list + ")");
  }
  return FeatureGroup(it - names.begin());
}

}  // namespace

const std::vector<std::string>& feature_group_names() {
  static const std::vector<std::string> names = {"balance", "timing",  "memory",
                                                 "system",  "network", "statistics"};
  return names;
}

FeatureGroup node_feature_group(NodeFeature f) {
  switch (f) {
    case kSlowMove:
    case kFastMove:
    case kPropMove:
    case kComputeRatio:
      return FeatureGroup::kBalance;
    case kBatchFill:
    case kMemHeadroom:
    case kOom:
      return FeatureGroup::kMemory;
    case kCpuUtil:
    case kGpuUtil:
      return FeatureGroup::kSystem;
    case kNetBytes:
    case kRetransPerStep:
    case kSrttRatio:
      return FeatureGroup::kNetwork;
    default:
      return FeatureGroup::kTiming;  // wait, residual, surprise, restarted, history, fixed share
  }
}

FeatureGroup global_feature_group(GlobalFeature f) {
  switch (f) {
    case kSpread:
    case kIdealGap:
      return FeatureGroup::kBalance;
    case kNoiseRatio:
    case kLossTrend:
    case kGradVariance:
    case kProgress:
      return FeatureGroup::kStatistics;
    default:
      return FeatureGroup::kTiming;  // comm share, mean residual, restarted share, cluster size
  }
}

void check_feature_groups(const std::vector<std::string>& groups) {
  for (size_t i = 0; i < groups.size(); ++i) {
    group_of(groups[i]);
    DYNAMIX_CHECK(std::find(groups.begin(), groups.begin() + std::ptrdiff_t(i), groups[i]) ==
                      groups.begin() + std::ptrdiff_t(i),
                  "ablate: feature group '" + groups[i] + "' given twice");
  }
}

void ablate_features(EncodedState& state, const std::vector<std::string>& groups) {
  for (const auto& name : groups) {
    const FeatureGroup g = group_of(name);
    for (int64_t f = 0; f < kNodeFeatures; ++f) {
      if (node_feature_group(NodeFeature(f)) != g) continue;
      for (int64_t r = 0; r < state.ranks; ++r) state.node[size_t(r * kNodeFeatures + f)] = 0;
    }
    for (int64_t f = 0; f < kGlobalFeatures; ++f) {
      if (global_feature_group(GlobalFeature(f)) == g) state.global[size_t(f)] = 0;
    }
  }
}

}  // namespace dynamix
