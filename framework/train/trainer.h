// DYNAMIX — the data-parallel trainer: every rank trains a full replica on its own batch size,
// gradients are averaged weighted by batch size with one SUM allreduce per bucket, and every
// decision window rank 0's BatchPolicy picks the next plan, broadcast to all ranks.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "agent/batch_policy.h"
#include "agent/noise_scale.h"
#include "bpf/monitor.h"
#include "datasets/dataset.h"
#include "datasets/prefetcher.h"
#include "framework/comm/communicator.h"
#include "framework/config/config.h"
#include "framework/core/error.h"
#include "framework/core/host_memory.h"
#include "framework/train/batch_uploader.h"
#include "framework/train/checkpoint.h"
#include "framework/train/grad_buckets.h"
#include "framework/train/hetero_emulator.h"
#include "framework/train/loss_scaler.h"
#include "framework/train/lr_schedule.h"
#include "framework/train/objective.h"
#include "framework/train/plan_replay.h"
#include "framework/train/progress.h"
#include "framework/train/run_outputs.h"
#include "framework/train/sampler.h"
#include "framework/train/step_stats.h"
#include "models/model.h"

namespace dynamix {

// The configured optimizer (train.optimizer: sgd | adamw) over `params`.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainConfig& train,
                                                        const std::vector<torch::Tensor>& params);

// Every rank stopped at the same step boundary, for a reason all of them know: a clean exit with
// `status` (sysexits), rank 0 saying why; nothing more is written.
class RunStopped : public Error {
 public:
  RunStopped(const std::string& what, int status) : Error(what), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

// The exit statuses of the two agreed stops below (sysexits.h's EX_IOERR and EX_DATAERR).
constexpr int kExitOutputError = 74;
constexpr int kExitDiverged = 65;

// Rank 0 could not write the run's outputs (a full disk, say): the last good checkpoint
// stays. what(): the file and the reason on rank 0, a shorter note on the others.
class OutputWriteError : public RunStopped {
 public:
  explicit OutputWriteError(const std::string& what) : RunStopped(what, kExitOutputError) {}
};

// Training diverged: a value every rank agrees on (the averaged gradient without loss
// scaling, the training loss, the test loss) is not finite; nothing of that step or evaluation is
// written.
class DivergedError : public RunStopped {
 public:
  explicit DivergedError(const std::string& what) : RunStopped(what, kExitDiverged) {}
};

struct TrainOptions {
  bool resume = false;     // continue from output.dir's checkpoint
  bool overwrite = false;  // start afresh even if output.dir holds a checkpoint
  bool float64 = false;    // train in double precision (exactness tests)
  bool quiet = false;      // nothing on the console (benchmarks, tests); output.progress otherwise
  bool write_outputs = true;
  int local_rank = 0;  // this rank's place among its node's ranks
  int gpu = -1;        // the GPU placement chose (placement.h); -1: local_rank % GPUs
  // Rank 0's lines from before the trainer existed (placement, watchdog), printed first through
  // the console, so every mode (json included) keeps its form.
  std::vector<std::string> startup_lines;
};

class Trainer {
 public:
  Trainer(Config config, Communicator& comm, TrainOptions options);
  ~Trainer();

  // Local set-up: datasets, model, optimizer, policy, checks. Throws dynamix::Error; performs no
  // collective, so the caller can agree on failure across ranks before going on.
  void setup();
  // Collective set-up: resume from checkpoint or broadcast rank 0's parameters; opens outputs.
  void prepare();
  // Trains to the end (epochs / max_steps) or until a stop signal; writes summary.json.
  // Returns true if it stopped early on a signal (checkpoint written). Throws RunStopped.
  bool run();

  // One training step with the current plan (exposed for tests and `dynamix bench step`).
  // Returns false when a rank ran out of memory: nothing was applied, the plan was repaired
  // (that rank's limit lowered) and the same samples are due again.
  bool step();
  const BatchBounds& bounds() const { return bounds_; }
  // Replaces the plan (every rank must call it with the same plan); drops a prefetched step.
  void set_plan(const std::vector<int32_t>& plan);
  const std::vector<int32_t>& plan() const { return plan_; }
  const StepAssignment& last_assignment() const { return last_assignment_; }
  const VariableBatchSampler& sampler() const { return *sampler_; }
  const TrainProgress& progress() const { return progress_; }
  Model& model() { return *model_; }
  const torch::Device& device() const { return device_; }
  const LossScaler& loss_scaler() const { return scaler_; }
  // Whether the last step's gradients were applied (false: not finite under loss scaling).
  bool last_step_applied() const { return last_applied_; }
  const Dataset& train_set() const { return *data_.train; }
  double current_lr() const;
  std::string monitor_source() const;  // "ebpf" | "procfs" | "none"
  // Seed of the training set's random augmentation in `epoch` (same on every rank).
  uint64_t data_seed(int64_t epoch) const;
  // One evaluation: loss and accuracy over the whole test set, and each rank's share of it.
  struct Evaluation {
    double loss = 0, accuracy = 0;
    std::vector<int64_t> samples;  // per rank: test samples evaluated (in proportion to the plan)
    std::vector<double> seconds;   // per rank: seconds its share took
  };
  // Evaluates on the test set, sharded over the ranks in proportion to the plan in force. Out of
  // memory on a rank halves its evaluation chunk and retries (see eval_chunk_). Both this and
  // save_checkpoint() first make the replicas' buffers identical (average_buffers()).
  Evaluation evaluate();
  void save_checkpoint();

 private:
  // What one step() carries from stage to stage.
  struct StepState {
    std::chrono::steady_clock::time_point start;
    LocalStep mine;                               // this rank's part of the step exchange
    int64_t epoch_before = 0, cursor_before = 0;  // the sampler's place before the step (OOM rewind)
    Batch batch;                                  // this rank's slice, dropped after backward
    int64_t n = 0;                                // its size
    std::string oom_what;                         // non-empty: out of memory while loading or computing
    double loss_scale = 1;
    double weight = 0;  // packing weight b_i / B / S
    bool overlapped = false;
    ReduceResult red;
    double lr = 0;
  };
  // The stages of step(), in order. reduce_gradients() returns false when a rank ran out of
  // memory (recovered; nothing is applied).
  void load_batch(StepState& s);
  void forward_backward(StepState& s);
  bool reduce_gradients(StepState& s);
  void apply_gradients(StepState& s);
  void record_step(StepState& s);  // the step exchange, window and progress, outputs
  void write_step_metrics(const StepState& s, const StepExchange& ex, double step_time);
  void report_progress(const StepExchange& ex, double wait_fraction);  // rank 0's console

  void decide_window();
  // Adds {loss x count, correct, counted} of test samples [first, first + count) to `sums`.
  void evaluate_chunk(int64_t first, int64_t count, double sums[3]);
  // This rank's test samples [first, last): its share of the plan in force.
  std::pair<int64_t, int64_t> eval_shard() const;
  // Test samples [begin, end) in chunks of eval_chunk_, halved on out of memory.
  void evaluate_range(int64_t begin, int64_t end, double sums[3]);
  // A loaded batch as the model takes it: float64 inputs under options_.float64, on the device
  // (the step's copies are asynchronous: non_blocking).
  Batch for_model(Batch b, bool non_blocking = false) const;
  // Every rank learns whether rank 0 failed to write an output; throws OutputWriteError if so.
  void check_outputs_written();
  // "the checkpoint of step N is kept" or "no checkpoint was written" (rank 0 knows).
  std::string checkpoint_kept() const;
  [[noreturn]] void throw_output_error() const;
  // Throws DivergedError for `step`: what was not finite, what is kept, what to change.
  [[noreturn]] void throw_diverged(int64_t step, const std::string& what) const;
  // policy.replay (rank 0): puts the plan listed for this step in force in `next` where it fits the
  // run's limits (else `note` says why); true when it did.
  bool put_replayed_plan(std::vector<int32_t>& next, std::string& note);
  // policy.replay (rank 0): the file lists a decision after the next step (asked for one step ahead).
  bool replay_listed_next() const;
  // All ranks learn which ranks ran out of memory in this step (batch size per rank, 0 = fine);
  // empty when none did. One 8-byte allreduce in the common case.
  std::vector<int32_t> agree_on_memory(bool out_of_memory, int32_t batch);
  void recover_from_oom(const std::vector<int32_t>& ooms, const std::string& what, int64_t epoch,
                        int64_t cursor);
  // Loads the batch of the step after the one in progress (which completes `completed` steps) in
  // the background, when that step's plan is already known.
  void prefetch_next(int64_t completed);
  void cancel_prefetch();
  double fractional_epoch() const;  // of the samples consumed (the sampler may be a step ahead)
  // Train loss for the console: the mean over ranks, then over the last kRecentLosses steps this
  // process ran (NaN before the first).
  double recent_loss() const;
  void maybe_evaluate(bool force);
  bool finished() const;
  double elapsed() const;
  std::string run_summary_line() const;
  nlohmann::json summary() const;  // summary.json's object
  void write_summary();
  void log(const std::string& line) const;
  // Broadcasts rank 0's values of a parameter or buffer (device tensors through a host copy
  // unless the backend takes device memory).
  void broadcast_tensor(torch::Tensor& t);
  // Makes the replicas' floating-point buffers (BatchNorm running statistics) identical before an
  // evaluation or a checkpoint: their average weighted by b_i / B of the last step, as gradients.
  void average_buffers();
  // Resume on another world size: keep B and the lr reference, split B evenly, say so.
  void resplit_for_new_world();
  // Resumed at the same world size with limits (batch.min, batch.max, batch.multiple) the
  // checkpoint's plan breaks: that plan projected onto them, and said so.
  void fit_resumed_plan();
  // Steps the whole run will take at global batch B (for the policy's progress feature).
  void set_total_steps_hint(int64_t global_batch);
  // output.sample_log: gathers every rank's indices of the step just done to rank 0, which
  // writes them to samples.jsonl (a collective; off by default).
  void log_samples();

  Config config_;
  Communicator& comm_;
  TrainOptions options_;
  int rank_ = 0;
  int world_ = 1;

  torch::Device device_{torch::kCPU};
  LossScaler scaler_;
  bool last_applied_ = true;
  DatasetSplits data_;
  ModelPtr model_;
  std::unique_ptr<Objective> objective_;  // train.loss
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<GradBuckets> buckets_;
  std::unique_ptr<VariableBatchSampler> sampler_;
  std::unique_ptr<BatchUploader> uploader_;  // CUDA: prefetched batches copied on their own stream
  std::unique_ptr<BatchPrefetcher> prefetcher_;
  StepAssignment next_assignment_;                    // the prefetched step, valid when has_next_
  std::vector<int64_t> next_indices_, step_indices_;  // output.sample_log: what was loaded
  bool has_next_ = false;
  bool next_empty_ = false;  // the prefetched step gives this rank no samples
  std::unique_ptr<HeteroEmulator> hetero_;
  std::unique_ptr<HeapHugePages> huge_pages_;  // train.huge_pages, where host memory is kept
  // Rank 0's console (unless options_.quiet), before policy_: the policy's update thread logs to
  // it until the policy is destroyed.
  std::unique_ptr<ProgressConsole> console_;
  std::unique_ptr<ConsoleLogStream> console_log_;  // console_'s log() as a stream (the policy's lines)

  std::unique_ptr<BatchPolicy> policy_;  // rank 0 only
  std::unique_ptr<RunOutputs> outputs_;  // rank 0 only
  std::unique_ptr<Monitor> monitor_;     // this rank's system and network probes
  NoiseScaleEstimator noise_;            // rank 0: gradient noise scale from per-rank norms
  LrSchedule lr_;
  BatchBounds bounds_;

  std::vector<int32_t> plan_;
  StepAssignment last_assignment_;
  TrainProgress progress_;
  WindowAccumulator window_;
  std::vector<double> window_losses_;
  // The last kRecentLosses steps' losses (global means), for the console: the window's mean is
  // stale between decisions and 0 before the first one.
  static constexpr size_t kRecentLosses = 10;
  std::deque<double> recent_losses_;
  std::vector<double> window_grad_norms_;
  double last_global_sq_norm_ = 0;
  int32_t window_oom_events_ = 0;            // this rank's, for its NodeRecord
  std::vector<nlohmann::json> pending_oom_;  // rank 0: events for the next decisions.jsonl line
  ReduceResult last_reduce_;                 // this rank's last gradient reduction (bytes, codec statistics)
  bool stop_agreed_ = false;                 // some rank received a stop signal (agreed in the step exchange)
  bool output_failed_agreed_ = false;        // rank 0 could not write an output (agreed likewise)
  bool decision_requested_ = false;          // rank 0: the policy asked for a decision now
  bool decide_agreed_ = false;               // that request, seen by every rank in the step exchange
  std::unique_ptr<PlanReplay> replay_;       // rank 0: policy.replay's plans (none otherwise)
  std::vector<double> step_compute_;         // rank 0: every rank's compute time of the last step
  int64_t last_checkpoint_step_ = -1;        // rank 0: the step of the last checkpoint written
  // Test samples this rank evaluates at once: halved (and kept) whenever one chunk runs out of
  // memory, so evaluation fits the rank's memory as training does. On the CPU a chunk of the size
  // of a training batch: glibc's malloc gives tensors above its mmap threshold (at most 32 MB)
  // fresh pages on every allocation, and 500 test images at once made the Fashion-MNIST CNN's
  // evaluation 7-8x slower than 64 at a time (docs/RESULTS.md §4). On a GPU the caching allocator
  // reuses its blocks, and larger chunks keep the device busy.
  static constexpr int64_t kCpuEvalChunk = 64, kGpuEvalChunk = 512;
  int64_t eval_chunk_ = kCpuEvalChunk;
  int64_t last_eval_step_ = -1;
  int64_t buffers_averaged_step_ = -1;  // replicas' buffers are identical as of this step
  int64_t total_steps_hint_ = 0;
  std::chrono::steady_clock::time_point start_;
  double elapsed_offset_ = 0;
};

}  // namespace dynamix
