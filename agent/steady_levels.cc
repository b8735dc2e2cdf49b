// DYNAMIX — each rank's level since its last change (see steady_levels.h).
#include "agent/steady_levels.h"

#include <algorithm>
#include <cmath>

namespace dynamix {

void SteadyLevels::observe(const ClusterState& state, const RankTimeModels& models,
                           const std::vector<uint8_t>& disturbed) {
  const size_t n = state.nodes.size();
  const std::vector<RankTimeModels::Reading>& readings = models.readings();
  const bool changed =
      std::any_of(readings.begin(), readings.end(), [](const auto& r) { return r.restarted; });
  if (changed || ranks_.size() != n) apart_ = false;
  if (ranks_.size() != n) ranks_.assign(n, {});
  for (size_t i = 0; i < n; ++i) {
    const NodeRecord& r = state.nodes[i];
    Rank& rank = ranks_[i];
    const bool restarted = i < readings.size() && readings[i].restarted;
    const bool valid = std::isfinite(r.compute_s) && r.compute_s > 0 && r.batch_size > 0;
    if (!valid || restarted || r.batch_size != rank.batch) {
      rank = Rank{};
      rank.batch = valid ? r.batch_size : 0;
      if (!valid || restarted) continue;
    }
    if (i < disturbed.size() && disturbed[i] != 0) continue;
    rank.level.add(std::log(r.compute_s));
  }
  if (!apart_) apart_ = levels_differ();
}

bool SteadyLevels::levels_differ() const {
  if (ranks_.size() < 2) return false;
  // Inverse-variance weights: a rank's mean is as good as its windows and their scatter, which is
  // taken as no less than the ranks' median scatter (a rank that started over has few windows, and
  // their scatter can come out small by chance).
  std::vector<double> variance(ranks_.size());
  for (size_t i = 0; i < ranks_.size(); ++i) {
    const Rank& r = ranks_[i];
    if (r.batch != ranks_.front().batch || r.level.n < kMinWindows) return false;
    const double widen = small_sample_widening(r.level.n - 1);
    variance[i] = r.level.variance() * widen * widen;
    if (!(variance[i] > 0) || !std::isfinite(variance[i])) return false;
  }
  const double typical = median(variance);
  std::vector<double> weight(ranks_.size());
  double sum_w = 0, sum_wl = 0;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    weight[i] = double(ranks_[i].level.n) / std::max(variance[i], typical);
    sum_w += weight[i], sum_wl += weight[i] * ranks_[i].level.mean;
  }
  const double mean = sum_wl / sum_w;
  double squares = 0, widest = 0;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    const double d = ranks_[i].level.mean - mean;
    squares += weight[i] * d * d;
    widest = std::max(widest, std::fabs(d));
  }
  return widest > kMinGap && squares > chi_square_bar(ranks_.size() - 1, extremes_z(ranks_.size()) + kExtraZ);
}

}  // namespace dynamix
