// DYNAMIX — what a batch policy sees (ClusterState) and what it returns (BatchPlan).
// The agent knows only these types; the framework fills them from measurements.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dynamix {

// A process's first steps pay one-time costs (allocations, lazy initialisation, thread pools,
// kernel set-up): on the 2-core VM of the real runs (2026-11-28, 556 ranks of 150 runs) step 1
// took a median 2.1x a steady step, step 2 also 2.1x (10 % of ranks 3.2x or more), step 3 1.07x.
// The first window's record (WindowAccumulator) and StartCheck leave them out; with step 2 in,
// the README demo's start read as noise (relative standard errors of 0.12-0.16 against 0.03
// without it) and the first decision waited for the window's end.
constexpr int32_t kStartupSteps = 2;

// One rank's window summary. Fixed-size POD: gathered to rank 0 with one MPI_Gather of bytes.
// Monitoring fields hold 0 where their source is unavailable (see monitor_source in summary.json).
struct NodeRecord {
  int32_t rank = 0;
  int32_t batch_size = 0;       // b_i in force during the window
  int32_t batch_max = 0;        // upper bound b_max_i for this rank (memory)
  int32_t steps = 0;            // steps averaged in this record
  int32_t oom_events = 0;       // steps this rank ran out of memory in the window (plan repaired)
  double compute_s = 0;         // mean forward+backward time per step (emulated slowdown included)
  double compute_rel_se = 0;    // relative standard error of compute_s over the window's steps
  double compute_recent_s = 0;  // mean compute time of the window's last quarter (recent_steps)
  double comm_s = 0;            // mean allreduce transfer time per step (straggler wait excluded)
  double wait_s = 0;            // mean straggler wait per step (gradients ready -> collective done)
  double data_s = 0;            // mean data-loading wait per step
  double optimizer_s = 0;       // mean optimizer step time
  double samples_per_s = 0;     // local compute throughput: b_i / compute_s
  double grad_sq_norm = 0;      // |g_i|^2 of the local mean gradient (last step), for the noise scale
  // System (issue: monitoring).
  double cpu_util_process = 0, cpu_util_machine = 0;  // fraction of one core / of the machine
  double mem_rss_bytes = 0, mem_available_bytes = 0;
  double gpu_util = 0, gpu_mem_used_bytes = 0, gpu_mem_total_bytes = 0, gpu_power_w = 0, gpu_sm_clock_mhz = 0;
  // Network (eBPF or /proc).
  double net_tx_bytes_per_s = 0, net_rx_bytes_per_s = 0, net_retransmits_per_s = 0, net_srtt_us = 0,
         net_cwnd = 0;
};

// Training-wide statistics for the window, computed on rank 0.
struct GlobalStats {
  int64_t step = 0;                // steps completed
  double epoch = 0;                // fractional epoch
  double progress = 0;             // fraction of the run done, in [0, 1]
  int32_t global_batch = 0;        // B = sum b_i
  double loss = 0;                 // mean training loss over the window
  double loss_trend = 0;           // relative change of the windowed loss vs the previous window
  double grad_sq_norm = 0;         // |g|^2 of the global (weighted) gradient, last step
  double grad_norm_variance = 0;   // variance of |g| over the window's steps
  double noise_scale = 0;          // B_noise estimate (0 when not yet estimated)
  double step_time_spread = 1;     // max/min per-rank step-critical time
  double last_test_accuracy = -1;  // -1 before the first evaluation
  // Samples/s of the load-balanced plan for this window's B, where the environment knows it (the
  // simulator does; real runs leave 0 and learning policies estimate it).
  double ideal_throughput = 0;
};

// Feasible set every plan is projected onto.
struct BatchBounds {
  int32_t min = 1;           // b_min for every rank
  std::vector<int32_t> max;  // b_max_i per rank
  bool fixed_global = true;  // keep sum b_i == global_batch
  // fixed_global: the B every plan sums to. Adaptive B: the run's initial B, the floor an adaptive
  // B does not go below (the batch its learning rate was set for; AdaptDL's init_batch_size).
  int32_t global_batch = 0;
  double max_change = 0.5;  // max relative change of b_i per window (0 = unlimited)
  // Every b_i a multiple of this (batch.multiple), and so B: fewer distinct shapes per rank (each
  // new one costs LibTorch's oneDNN or cuDNN a setup and memory) and tensor-core friendly sizes.
  int32_t multiple = 1;
};

struct ClusterState {
  int64_t window = 0;             // index of the decision window (0-based)
  std::vector<NodeRecord> nodes;  // one per rank, in rank order
  GlobalStats global;
  BatchBounds bounds;
};

struct BatchPlan {
  std::vector<int32_t> batch_sizes;  // b_i per rank, all >= 1
  std::vector<double> actions;       // policy-specific per-rank actions (e.g. multipliers); may be empty
  double reward = 0;                 // reward the policy assigned to the last window (learning policies)
  bool has_reward = false;
  std::string note;  // why (fallbacks, clamps), for decisions.jsonl
};

}  // namespace dynamix
