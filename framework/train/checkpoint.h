// DYNAMIX — training checkpoints: model, optimizer, progress (step, epoch, sampler position,
// batch plan, elapsed time, evaluation records), the policy's state and every rank's RNG state,
// serialized with LibTorch's archive inside the checksummed container of checkpoint_file.h.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dynamix {

struct TrainProgress {
  int64_t step = 0;           // steps completed
  int64_t epoch = 0;          // sampler epoch
  int64_t cursor = 0;         // sampler position within the epoch
  std::vector<int32_t> plan;  // batch plan in force
  int64_t base_batch = 0;     // the run's reference global batch (fixed B, lr scaling); 0: unknown
  int64_t world_size = 0;
  double elapsed_s = 0;  // training wall time so far
  double samples_seen = 0;
  double wait_fraction_sum = 0;  // running sums for summary.json
  double last_test_accuracy = -1;
  int64_t last_eval_step = -1;  // the step last evaluated (-1: none, or unknown in older checkpoints)
  double best_test_accuracy = -1;
  double time_to_target_s = -1;  // -1 = not reached
  int64_t windows = 0;           // decision windows completed
  double last_window_loss = 0;
  // The decision window in progress: each step's global loss and gradient norm since the last
  // decision, so that a resumed run hands the policy the same window statistics.
  std::vector<double> window_losses, window_grad_norms;
  int64_t oom_events = 0;             // steps redone after a rank ran out of memory
  std::vector<int32_t> batch_max;     // per-rank batch limits (lowered by out-of-memory events)
  double loss_scale = 0;              // dynamic loss scaling: S (0 = not in use)
  int64_t loss_scale_good_steps = 0;  // finite steps since S last changed
  int64_t skipped_steps = 0;          // steps skipped for non-finite gradients
  std::string model, optimizer, policy;
  std::string policy_state;             // BatchPolicy::save_state()
  std::vector<std::string> rng_states;  // torch CPU generator state per rank
};

// Serializes to the payload of a checkpoint container.
std::string encode_checkpoint(torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                              const TrainProgress& progress);
// Restores model and optimizer and returns the progress. `origin` names the file in errors.
// `optimizer_name` (train.optimizer; empty: not checked) must be the one the checkpoint was
// written with: LibTorch's own check of another optimizer's state is an internal assertion.
TrainProgress decode_checkpoint(const std::string& payload, torch::nn::Module& model,
                                torch::optim::Optimizer& optimizer, const std::string& origin,
                                const std::string& optimizer_name = "");
// Reads only the progress record (for `dynamix inspect`).
TrainProgress peek_checkpoint(const std::string& payload, const std::string& origin);

std::string generator_state();  // this process's CPU generator
void set_generator_state(const std::string& state);

}  // namespace dynamix
