// DYNAMIX — the plan to go back to when a followed slowdown is over.
#include "agent/slowdown_return.h"

namespace dynamix {

void SlowdownReturn::reset() {
  before_.clear();
  slowed_.clear();
}

bool SlowdownReturn::ranks_back(const RankTimeModels& models) const {
  for (size_t i = 0; i < slowed_.size(); ++i) {
    if (slowed_[i] && models.in_slowdown(i)) return false;
  }
  return true;
}

void SlowdownReturn::decided(const RankTimeModels& models, const std::vector<int32_t>& current,
                             const std::vector<int32_t>& next) {
  const bool sized = next.size() == current.size() && models.models().size() == next.size();
  for (size_t i = 0; sized && i < next.size(); ++i) {
    if (next[i] >= current[i] || !models.in_slowdown(i)) continue;
    if (before_.empty()) before_ = current, slowed_.assign(current.size(), false);
    slowed_[i] = true;
  }
  // Every rank is back and the plan has settled: the plan before is no longer offered.
  if (next == current && ranks_back(models)) reset();
}

const std::vector<int32_t>* SlowdownReturn::offer(const RankTimeModels& models) const {
  return !before_.empty() && ranks_back(models) ? &before_ : nullptr;
}

}  // namespace dynamix
