// DYNAMIX — per-rank compute models t_i(b) = alpha_i + beta_i·b fitted from a real run's metrics.jsonl.
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

// Reads the output contract's metrics.jsonl (batch_sizes[], compute_time[] per step) and fits
// each rank by least squares. The first step is skipped when there are ten or more (warm-up).
// Throws dynamix::Error naming the file (and line) when it is unreadable or inconsistent.
std::vector<FittedRank> fit_profile_from_metrics(const std::string& path);

}  // namespace dynamix
