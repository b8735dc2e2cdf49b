// DYNAMIX — per-step statistics exchanged by one small SUM allreduce (each rank fills its own
// slot), which gives every rank every rank's times; and the per-window accumulator that turns
// them into this rank's NodeRecord.
#pragma once

#include <cstdint>
#include <vector>

#include "agent/cluster_state.h"

namespace dynamix {

// What one rank measured in one step.
struct LocalStep {
  double data_s = 0;
  double compute_s = 0;    // forward+backward (+ emulated slowdown)
  double allreduce_s = 0;  // wall time in the gradient allreduce (wait + transfer)
  double optimizer_s = 0;
  double loss_sum = 0;  // mean loss x samples
  double samples = 0;
  double local_sq_norm = 0;
  double stop = 0;           // 1 if this rank received a stop signal
  double output_failed = 0;  // 1 if this rank could not write the run's outputs
  double decide = 0;         // rank 0: 1 if the policy asked for a decision before the window ends
};

constexpr int kStepFields = 10;

// Every rank's LocalStep after the exchange, with derived wait and transfer times.
struct StepExchange {
  std::vector<LocalStep> ranks;
  std::vector<double> wait_s;  // straggler wait: slowest (data+compute) minus own
  std::vector<double> comm_s;  // allreduce time minus the straggler wait
  double loss = 0;             // mean loss over all samples
  double samples = 0;
  bool stop = false;
  bool output_failed = false;
  bool decide = false;

  // Packs `mine` into slot `rank` of a world * kStepFields buffer (zeros elsewhere).
  static std::vector<double> pack(const LocalStep& mine, int rank, int world);
  static StepExchange unpack(const std::vector<double>& summed, int world);
};

class WindowAccumulator {
 public:
  void add(const StepExchange& ex, int rank, int32_t batch_size);
  // The next kStartupSteps steps added stay out of their window's record, but for the window's
  // last step: the first steps a process runs pay one-time costs (cluster_state.h; 2.5 s against
  // 0.08 s seen on the README demo) that would inflate the first window's times, and with them
  // every policy's first fit.
  void set_aside_startup() { startup_left_ = kStartupSteps; }
  // This rank's record for the window; resets the accumulator.
  NodeRecord take(int rank, int32_t batch_max);
  int64_t steps() const { return static_cast<int64_t>(steps_.size()); }

 private:
  struct Step {
    double data_s, compute_s, comm_s, wait_s, optimizer_s, samples;
  };
  std::vector<Step> steps_;   // this window's steps, for the means and the recent (last quarter) mean
  int32_t startup_left_ = 0;  // start-up steps still to come
  size_t set_aside_ = 0;      // this window's leading steps left out of the record
  int32_t batch_ = 0;
  double sq_norm_ = 0;
};

}  // namespace dynamix
