// DYNAMIX — ClusterState -> scale-free per-rank and global features, and their running normaliser.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/cluster_state.h"
#include "agent/ppo/rules.h"
#include "agent/rank_models.h"
#include "agent/steady_levels.h"

namespace dynamix {

// What the heuristics know about the window, as per-rank batch proposals (continuous, summing to
// `global_batch`): the balanced split of the fitted models (slow: the history; after a change, the
// window's last quarter), the same models rescaled by the last window's mean (fast: reacts at
// once, noisier; while speeds drift, each rank's rate at its batch, as the drift confounds the
// models' fixed cost), and the proportional controller's rate split b_i/t_i (no fixed-cost term).
struct BalanceView {
  double global_batch = 0;
  std::vector<double> slow, fast, proportional;
  double predicted_compute_s = 0;  // balanced compute time of the slow proposal (0 if unknown)
  // Each rank's fitted model rescaled to its last window (the fast proposal's forecast; empty
  // when not ready): what the next window's compute time at a given batch is predicted to be.
  std::vector<RankTimeModels::Model> forecast;
  // Each rank's relative step noise where the split weighed it (agent/noise_split.h; empty
  // otherwise): a move is then judged by the expected slowest step, not the slowest mean.
  std::vector<double> noise;
  bool ready = false;  // every rank has a model; otherwise every proposal = current
  // The homogeneous hold (docs/AGENT.md items 12, 29) found every rank's fitted level within its
  // noise of the others', outside tracking and with no recurring hold: the equal split is balanced.
  bool equal_ranks = false;
  // The recurring hold (agent/recurring_slowdown.h) set the proposals: the slow phase's plan.
  bool recurring_hold = false;
  std::string note;  // a rule that shaped the proposals, for decisions.jsonl
};
// `rules`: those off leave their proposals' shaping out (noise split, the holds, tracking).
// `steady` (optional): each rank's level since its last change; ranks apart there are not held as
// equal, however close their forgetting models put them.
BalanceView balance_view(const ClusterState& state, const RankTimeModels& models, double global_batch,
                         const RuleSet& rules = {}, const SteadyLevels* steady = nullptr);

// Feature indices. Every feature is a ratio, a fraction or a log-ratio: multiplying every time (or
// every byte count) by a constant leaves all of them unchanged. Groups (for the ablation table in
// docs/AGENT.md): balance, timing, memory, system, network, statistics.
enum NodeFeature : int64_t {
  kSlowMove,        // log(slow_i / b_i)                                      balance
  kFastMove,        // log(fast_i / b_i)                                      balance
  kPropMove,        // log(proportional_i / b_i)                              balance
  kComputeRatio,    // log(compute_i / mean compute)                          balance
  kWaitFraction,    // wait_i / step_i                                        timing
  kResidual,        // RMS relative misfit of the rank's model (noise)         timing
  kSurprise,        // log(measured / predicted before this window)           timing
  kRestarted,       // the rank's model restarted this window (a change)      timing
  kHistoryFill,     // observations kept / history                            timing
  kFixedShare,      // alpha_i / t_i(b_i): fixed per-step cost                timing
  kBatchFill,       // b_i / b_max_i                                          memory
  kMemHeadroom,     // free fraction of device (or host) memory               memory
  kOom,             // the rank ran out of memory in the window               memory
  kCpuUtil,         // machine CPU utilisation                                system
  kGpuUtil,         // GPU utilisation                                        system
  kNetBytes,        // log(bytes_i / mean bytes)                              network
  kRetransPerStep,  // log1p(retransmits per step)                            network
  kSrttRatio,       // log(srtt_i / mean srtt)                                network
  kNodeFeatures
};
enum GlobalFeature : int64_t {
  kCommShare,       // comm / step                                            timing
  kSpread,          // log(max/min compute)                                   balance
  kIdealGap,        // log(step / (predicted balanced compute + comm))        balance
  kMeanResidual,    // mean model misfit over ranks                           timing
  kRestartedShare,  // fraction of ranks whose model restarted                timing
  kClusterSize,     // log2(N) / 10                                           timing
  kNoiseRatio,      // log1p(B_noise / B)                                     statistics
  kLossTrend,       // relative loss change                                   statistics
  kGradVariance,    // log1p(var|g| / |g|^2)                                  statistics
  kProgress,        // fraction of the run done                               statistics
  kGlobalFeatures
};

struct EncodedState {
  int64_t ranks = 0;
  std::vector<float> node;    // ranks x kNodeFeatures, row-major
  std::vector<float> global;  // kGlobalFeatures
  bool finite = true;         // false when a field the encoder reads is NaN/Inf
  std::string problem;        // which field, when !finite
};

EncodedState encode_state(const ClusterState& state, const RankTimeModels& models, const BalanceView& view);

// Running mean/variance per feature (Chan et al.'s parallel form of Welford's update), as in
// CleanRL's RunningMeanStd: starts at mean 0, var 1, count 1e-4.
class RunningNorm {
 public:
  explicit RunningNorm(int64_t dims = 0);
  // rows x dims values, row-major.
  void update(const std::vector<float>& values, int64_t rows);
  // (x - mean) / sqrt(var + 1e-8), clipped to [-clip, clip].
  std::vector<float> normalize(const std::vector<float>& values, int64_t rows, double clip) const;

  int64_t dims() const { return static_cast<int64_t>(mean_.size()); }
  const std::vector<double>& mean() const { return mean_; }
  const std::vector<double>& var() const { return var_; }
  double count() const { return count_; }
  void set(std::vector<double> mean, std::vector<double> var, double count);

 private:
  std::vector<double> mean_, var_;
  double count_ = 1e-4;
};

}  // namespace dynamix
