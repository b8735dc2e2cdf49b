// DYNAMIX — a simulator profile fitted from a real run's metrics.jsonl: per-rank compute models
// t_i(b) = alpha_i + beta_i·b, the exposed communication time per step and the compute noise.
#pragma once

#include <string>
#include <vector>

namespace dynamix {

struct FittedRank {
  double alpha_s = 0;        // fixed time per step
  double beta_s = 0;         // time per sample
  double rel_residual = 0;   // relative RMS residual of the fit (the run's compute noise)
  int distinct_batches = 0;  // 1: alpha could not be separated and is 0 (proportional model)
};

struct FittedProfile {
  std::vector<FittedRank> ranks;
  // Median over steps of step_time − max_i compute_time_i: what a step costs beyond the slowest
  // rank's compute (the allreduce not hidden by overlap). 0 when the file has no step_time.
  double exposed_comm_s = 0;
  double grad_bytes = 0;  // comm.bytes of the last step record (0 when absent)
  double noise = 0;       // median over ranks of rel_residual: the simulator's workload.noise
};

// Reads the output contract's metrics.jsonl (batch_sizes[], compute_time[] and step_time per step)
// and fits each rank by least squares. The first step is skipped when there are ten or more
// (warm-up). Throws dynamix::Error naming the file (and line) when it is unreadable or inconsistent.
FittedProfile fit_profile_from_metrics(const std::string& path);

}  // namespace dynamix
