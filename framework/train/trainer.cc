// DYNAMIX — the data-parallel trainer.
#include "framework/train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <sstream>

#include "agent/plan_projection.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/core/clock.h"
#include "framework/core/error.h"
#include "framework/core/host_memory.h"
#include "framework/core/random.h"
#include "framework/core/strings.h"
#include "framework/train/checkpoint_file.h"
#include "framework/train/device.h"
#include "framework/train/foreach_sgd.h"
#include "framework/train/memory_cap.h"
#include "framework/train/optimizer_archive.h"
#include "framework/train/policy_factory.h"
#include "framework/train/precision.h"
#include "framework/train/signals.h"
#include "models/registry.h"

namespace dynamix {
namespace {

using Clock = std::chrono::steady_clock;

DatasetSpec dataset_spec(const DatasetConfig& d) {
  DatasetSpec s;
  s.name = d.name;
  s.path = d.path;
  s.augment = d.augment;
  s.train_size = d.train_size;
  s.test_size = d.test_size;
  s.shape = d.shape;
  s.classes = d.classes;
  s.seq_len = d.seq_len;
  s.vocab = d.vocab;
  s.users = d.users;
  s.items = d.items;
  s.train_inputs = d.train_inputs;
  s.train_labels = d.train_labels;
  s.test_inputs = d.test_inputs;
  s.test_labels = d.test_labels;
  return s;
}

}  // namespace

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainConfig& t,
                                                        const std::vector<torch::Tensor>& params) {
  switch (t.optimizer) {
    case Optimizer::kSgd:
      return std::make_unique<ForeachSgd>(params, torch::optim::SGDOptions(t.lr)
                                                      .momentum(t.momentum)
                                                      .nesterov(t.nesterov)
                                                      .weight_decay(t.weight_decay));
    case Optimizer::kAdamw:
      return std::make_unique<PortableAdamW>(params,
                                             torch::optim::AdamWOptions(t.lr).weight_decay(t.weight_decay));
  }
  throw Error("train.optimizer: unknown optimizer");
}

Trainer::Trainer(Config config, Communicator& comm, TrainOptions options)
    : config_(std::move(config)), comm_(comm), options_(options), rank_(comm.rank()), world_(comm.size()) {
  if (rank_ == 0 && !options_.quiet) {
    console_ = std::make_unique<ProgressConsole>(progress_mode(config_.output.progress, stdout_is_terminal()),
                                                 config_.output.progress_interval_s, stdout);
    console_log_ = std::make_unique<ConsoleLogStream>(*console_);
  }
  for (const auto& line : options_.startup_lines) log(line);
}

Trainer::~Trainer() = default;

void Trainer::log(const std::string& line) const {
  if (console_) console_->log(line);
}

void Trainer::setup() {
  if (options_.resume) {
    for (const auto& note : adapt_to_world(config_, world_)) log("resume: " + note);
  }
  validate_for_world(config_, world_);
  device_ = choose_device(config_, options_.gpu >= 0 ? options_.gpu : options_.local_rank);
  if (config_.backend == Backend::kNccl && !comm_.reduces_device_buffers()) {
    throw Error("backend: nccl, but the trainer was given a communicator that reduces host buffers only (" +
                comm_.backend() + ")");
  }
  make_device_current(device_);
  if (device_.is_cuda()) {
    at::globalContext().setBenchmarkCuDNN(config_.train.cudnn_benchmark);
    eval_chunk_ = kGpuEvalChunk;
  }
  const std::string ckpt = RunOutputs::checkpoint_path_in(config_.output.dir);
  if (options_.resume && !std::filesystem::exists(ckpt)) {
    throw Error("--resume: no checkpoint at " + ckpt);
  }
  if (!options_.resume && !options_.overwrite && options_.write_outputs && std::filesystem::exists(ckpt)) {
    throw Error("output.dir '" + config_.output.dir + "' already holds a run (" + ckpt +
                "); pass --resume to continue it, --overwrite to replace it, or choose another output.dir");
  }

  // Before the first large block: every rank's steps reuse freed host memory (host_memory.h).
  if (config_.train.keep_host_memory) {
    const KeptHostMemory kept = keep_freed_host_memory();
    log(kept.said);
    if (kept.kept && config_.train.huge_pages) {
      huge_pages_ = std::make_unique<HeapHugePages>();
      log(huge_pages_->describe());
    }
  }
  data_ = load_dataset(dataset_spec(config_.dataset));
  if (huge_pages_) huge_pages_->advise();  // the dataset's pages, collapsed once
  // Emulated device memory counts what a GPU would hold (model, optimizer, activations, batches),
  // not the host-side dataset loaded above.
  const auto& mem = config_.hetero.memory_mb;
  const double mem_mb = mem.empty() ? 0.0 : mem.size() == 1 ? mem[0] : mem[static_cast<size_t>(rank_)];
  if (mem_mb > 0) install_cpu_memory_cap(static_cast<size_t>(mem_mb * 1048576.0));  // CPU runs only
  torch::manual_seed(config_.train.seed);  // identical initial weights on every rank
  ModelSpec spec;
  spec.input_shape = data_.train->sample_shape();
  spec.num_classes = data_.train->num_classes();
  spec.task = data_.train->task();
  spec.input_cardinality = data_.train->input_cardinality();
  model_ = make_model(config_.model, spec);  // initialized on the CPU: the same weights everywhere
  if (device_.is_cuda()) model_->to(device_);
  if (options_.float64) model_->to(torch::kFloat64);
  if (config_.train.channels_last) to_channels_last(*model_);
  // The loss, checked against the model and the data on two test samples (nothing trains yet).
  const Dataset& probe = data_.test->size() > 0 ? *data_.test : *data_.train;
  objective_ =
      make_objective(config_.train, config_.model, *model_,
                     for_model(probe.get({0, std::min<int64_t>(1, probe.size() - 1)}, config_.train.seed)),
                     spec.num_classes);

  const auto& t = config_.train;
  LossScaleOptions scaling;
  scaling.enabled = t.loss_scale == LossScaling::kDynamic ||
                    (t.loss_scale == LossScaling::kAuto && t.precision == Precision::kFp16);
  scaling.init = t.loss_scale_init;
  scaling.growth_interval = t.loss_scale_growth_interval;
  scaler_ = LossScaler(scaling);
  optimizer_ = make_optimizer(t, model_->parameters());
  std::unique_ptr<GradientCodec> codec;
  if (config_.comm.compression != Compression::kNone) {
    CodecOptions o;
    o.hlc_ratio = config_.comm.hlc_ratio;
    o.hlc_auto = config_.comm.hlc_auto;
    o.hlc_max_bytes_fraction = config_.comm.hlc_max_bytes_fraction;
    codec = make_codec(config_.comm.compression, o);
  }
  buckets_ =
      std::make_unique<GradBuckets>(model_->parameters(), config_.comm.bucket_mb, comm_, std::move(codec));
  sampler_ = std::make_unique<VariableBatchSampler>(data_.train->size(), t.seed);
  std::function<Batch(Batch)> upload;
  if (device_.is_cuda()) {
    uploader_ = std::make_unique<BatchUploader>(device_);
    upload = [uploader = uploader_.get()](Batch b) { return uploader->upload(std::move(b)); };
  }
  prefetcher_ =
      std::make_unique<BatchPrefetcher>(data_.train, /*pin_memory=*/device_.is_cuda(), std::move(upload),
                                        loader_workers(config_.dataset.workers, device_));
  hetero_ = std::make_unique<HeteroEmulator>(config_.hetero, rank_, world_, config_.train.seed);
  if (config_.comm.overlap && world_ > 1) {
    if (mpi_allows_comm_thread()) {
      OverlapHooks hooks;
      hooks.on_bucket_ready = [this] { hetero_->pace(); };
      hooks.after_bucket = [this](size_t wire_bytes, double comm_s) {
        HeteroEmulator::sleep_seconds(hetero_->comm_delay(wire_bytes, comm_s));
      };
      buckets_->enable_overlap(std::move(hooks));
    } else {
      log("comm.overlap: MPI was started without thread support (MPI_THREAD_SERIALIZED); gradients are "
          "reduced after backward");
    }
  }
  // Each rank watches its own process and its GPU (NVML's index; equal to CUDA's unless
  // CUDA_VISIBLE_DEVICES reorders them).
  if (config_.monitor.enabled) {
    monitor_ = Monitor::create(config_.monitor.ebpf, {static_cast<int>(::getpid())},
                               device_.is_cuda() ? static_cast<int>(device_.index()) : -1);
  }

  plan_ = initial_batches(config_, world_);
  bounds_ = config_bounds(config_, plan_);
  lr_.lr0 = t.lr;
  lr_.base_batch = bounds_.global_batch;
  lr_.scaling = t.lr_scaling;
  lr_.warmup_steps = t.warmup_steps;

  progress_.world_size = world_;
  progress_.plan = plan_;
  progress_.base_batch = bounds_.global_batch;
  progress_.model = config_.model;
  progress_.optimizer = choice_name(t.optimizer);
  progress_.policy = config_.policy.name;
  set_total_steps_hint(bounds_.global_batch);
}

void Trainer::set_total_steps_hint(int64_t global_batch) {
  const auto& t = config_.train;
  const double steps_per_epoch =
      static_cast<double>(data_.train->size()) / static_cast<double>(std::max<int64_t>(1, global_batch));
  total_steps_hint_ = static_cast<int64_t>(std::ceil(steps_per_epoch * t.epochs));
  if (t.max_steps > 0) total_steps_hint_ = std::min(total_steps_hint_, t.max_steps);
}

void Trainer::prepare() {
  if (options_.resume) {
    // Rank 0 reads the file and broadcasts it: no shared filesystem needed.
    std::string payload;
    int64_t size = 0;
    std::string error;
    const std::string path = RunOutputs::checkpoint_path_in(config_.output.dir);
    if (rank_ == 0) {
      try {
        payload = read_checkpoint_file(path);
        size = static_cast<int64_t>(payload.size());
      } catch (const Error& e) {
        error = e.what();
        size = -1;
      }
    }
    comm_.broadcast(&size, 1, DType::kInt64, 0);
    if (size < 0) throw Error(rank_ == 0 ? error : "checkpoint unreadable on rank 0");
    payload.resize(static_cast<size_t>(size));
    comm_.broadcast(payload.data(), payload.size(), DType::kUInt8, 0);
    progress_ = decode_checkpoint(payload, *model_, *optimizer_, path, choice_name(config_.train.optimizer));
    sampler_->set_position(progress_.epoch, progress_.cursor);
    if (progress_.world_size == world_) {
      plan_ = progress_.plan;
      if (progress_.base_batch <= 0) progress_.base_batch = lr_.base_batch;  // older checkpoints
      // The run's B and lr reference are the checkpoint's, not batch.init's: they differ when an
      // earlier resume changed the world size (the config's lists were tiled for it then).
      lr_.base_batch = progress_.base_batch;
      bounds_.global_batch = static_cast<int32_t>(progress_.base_batch);  // fixed B, or an adaptive B's floor
      // Limits learned from out-of-memory events hold for the same ranks (never above the config).
      if (progress_.batch_max.size() == bounds_.max.size()) {
        for (size_t i = 0; i < bounds_.max.size(); ++i) {
          bounds_.max[i] = std::min(bounds_.max[i], std::max(1, progress_.batch_max[i]));
        }
      }
      set_generator_state(progress_.rng_states[static_cast<size_t>(rank_)]);
      fit_resumed_plan();
    } else {
      resplit_for_new_world();  // the sampler continues the epoch
      torch::manual_seed(config_.train.seed + 1000003ULL * static_cast<uint64_t>(rank_) + progress_.step);
    }
    if (rank_ == 0)
      policy_ = make_policy(config_, bounds_, plan_, console_log_.get());  // resumed plan, bounds
    if (rank_ == 0 && !progress_.policy_state.empty() && progress_.policy == policy_->name()) {
      policy_->load_state(progress_.policy_state);
    }
    if (scaler_.enabled() && progress_.loss_scale > 0) {
      scaler_.restore(progress_.loss_scale, progress_.loss_scale_good_steps, progress_.skipped_steps);
    }
    elapsed_offset_ = progress_.elapsed_s;
    window_losses_ = progress_.window_losses;  // the window in progress goes on where it was
    window_grad_norms_ = progress_.window_grad_norms;
    // Not evaluated again at the resumed step if it was evaluated before the checkpoint; a
    // checkpoint of a stop between evaluations (or at max_steps) is evaluated when the run ends.
    // Older checkpoints do not say: their step counts as evaluated when any evaluation was.
    last_eval_step_ = progress_.last_eval_step >= 0 || progress_.last_test_accuracy < 0
                          ? progress_.last_eval_step
                          : progress_.step;
    set_total_steps_hint(lr_.base_batch);
    hetero_->on_step(progress_.step);
    last_checkpoint_step_ = progress_.step;
    log("resumed from " + path + " at step " + std::to_string(progress_.step));
  } else {
    if (rank_ == 0) policy_ = make_policy(config_, bounds_, plan_, console_log_.get());
    // Replicas start identical: rank 0's parameters and buffers are broadcast.
    torch::NoGradGuard no_grad;
    for (auto& p : model_->parameters()) broadcast_tensor(p);
    for (auto& b : model_->buffers()) {
      if (b.is_floating_point()) broadcast_tensor(b);
    }
    torch::manual_seed(config_.train.seed + 1000003ULL * static_cast<uint64_t>(rank_) + 1);
  }
  buffers_averaged_step_ = progress_.step;  // rank 0's buffers everywhere (broadcast or checkpoint)
  if (!config_.policy.replay.empty()) {
    if (rank_ == 0) replay_ = std::make_unique<PlanReplay>(PlanReplay::load(config_.policy.replay, world_));
    log("policy.replay: the plans of " + config_.policy.replay + " are put in force at the steps it lists; " +
        config_.policy.name + " decides there and decisions.jsonl logs its plan as \"proposed\"");
  }
  if (config_.policy.shadow) {
    log("policy.shadow: " + config_.policy.name +
        " decides every window and decisions.jsonl logs its plan as \"proposed\"; the plan in force is kept");
  }
  if (rank_ == 0 && options_.write_outputs) {
    outputs_ = std::make_unique<RunOutputs>(config_.output.dir, options_.resume, progress_.step,
                                            config_.output.sample_log);
    outputs_->write_file("config.yaml", config_.source);
  }
  start_ = Clock::now();
}

void Trainer::fit_resumed_plan() {
  // A run resumed with limits its checkpoint's plan breaks (a lower batch.max, a higher batch.min,
  // a batch.multiple): that plan projected onto them (B kept where they allow it) from the first
  // resumed step on, not from the first decision.
  std::string why;
  if (plan_within(plan_, bounds_, static_cast<size_t>(world_), &why)) return;
  BatchBounds fit = bounds_;
  fit.max_change = 0;
  const std::string before = join_plan(plan_);
  const BatchPlan p = project_plan(std::vector<double>(plan_.begin(), plan_.end()), plan_, fit);
  plan_ = p.batch_sizes;
  log("resume: the checkpoint's plan [" + before + "] breaks this run's limits (" + why + "): using [" +
      join_plan(plan_) + "]" + (p.note.empty() ? "" : " (" + p.note + ")"));
}

void Trainer::resplit_for_new_world() {
  // The run keeps its global batch B (fixed B, or where an adaptive B had moved) and its lr
  // reference, so the learning rate stays what it was; B is split evenly over the new ranks.
  const int64_t old_world = progress_.world_size;
  const int64_t old_b = std::accumulate(progress_.plan.begin(), progress_.plan.end(), int64_t{0});
  if (progress_.base_batch <= 0) progress_.base_batch = old_b;  // checkpoints from before the field
  lr_.base_batch = progress_.base_batch;
  const int64_t want = bounds_.fixed_global ? progress_.base_batch : old_b;
  BatchBounds even = bounds_;  // the same B on every rank, within the bounds, largest remainders first
  even.fixed_global = true;
  even.global_batch = static_cast<int32_t>(want);
  even.max_change = 0;
  const std::vector<double> desired(static_cast<size_t>(world_), double(want) / world_);
  plan_ = project_plan(desired, std::vector<int32_t>(static_cast<size_t>(world_), 1), even).batch_sizes;
  const int64_t got = std::accumulate(plan_.begin(), plan_.end(), int64_t{0});
  bounds_.global_batch = static_cast<int32_t>(bounds_.fixed_global ? got : progress_.base_batch);
  log("resume: world size changed from " + std::to_string(old_world) + " to " + std::to_string(world_) +
      "; global batch " + std::to_string(want) + " split evenly: [" + join_plan(plan_) + "]" +
      (got == want ? "" : " (B is now " + std::to_string(got) + ": batch.min/max allow no more)"));
  progress_.world_size = world_;
  progress_.plan = plan_;
  progress_.batch_max.clear();  // limits learned from OOM belonged to the old ranks
}

void Trainer::log_samples() {
  // Ranks' slices differ in length: pad each to the longest (the counts are known everywhere).
  const auto& counts = last_assignment_.counts;
  const size_t width = static_cast<size_t>(*std::max_element(counts.begin(), counts.end()));
  std::vector<int64_t> mine(width, -1);
  std::copy(step_indices_.begin(), step_indices_.end(), mine.begin());
  std::vector<int64_t> all(rank_ == 0 ? width * static_cast<size_t>(world_) : 0);
  if (world_ > 1) {
    comm_.gather(mine.data(), width * sizeof(int64_t), rank_ == 0 ? all.data() : nullptr, 0);
  } else {
    all = mine;
  }
  if (!outputs_) return;
  nlohmann::json per_rank = nlohmann::json::array();
  for (int r = 0; r < world_; ++r) {
    const auto begin = all.begin() + static_cast<std::ptrdiff_t>(width) * r;
    per_rank.push_back(std::vector<int64_t>(begin, begin + counts[static_cast<size_t>(r)]));
  }
  outputs_->samples({{"step", progress_.step}, {"epoch", last_assignment_.epoch}, {"indices", per_rank}});
}

void Trainer::broadcast_tensor(torch::Tensor& t) {
  // Bytes: any dtype, and the layout (e.g. channels_last) travels as it is in memory.
  const bool host_copy = t.is_cuda() && !comm_.reduces_device_buffers();
  torch::Tensor buf = host_copy ? t.to(torch::kCPU).contiguous() : t.contiguous();
  comm_.broadcast(buf.data_ptr(), static_cast<size_t>(buf.nbytes()), DType::kUInt8, 0);
  if (host_copy || !t.is_contiguous()) t.copy_(buf);
}

void Trainer::average_buffers() {
  // Each rank's BatchNorm statistics follow its own batches; evaluation (sharded) and checkpoints
  // (rank 0's state) need one set. Integer buffers (num_batches_tracked) agree: every rank runs
  // every step. Averaged once per step, so evaluating and checkpointing it rounds only once.
  if (world_ == 1 || buffers_averaged_step_ == progress_.step) return;
  buffers_averaged_step_ = progress_.step;
  std::vector<torch::Tensor> buffers;
  for (auto& b : model_->buffers()) {
    if (b.is_floating_point()) buffers.push_back(b);
  }
  if (buffers.empty()) return;
  torch::NoGradGuard no_grad;
  const auto& batches = last_assignment_.counts.empty() ? plan_ : last_assignment_.counts;  // no step yet
  const double weight =
      batches[static_cast<size_t>(rank_)] / std::accumulate(batches.begin(), batches.end(), 0.0);
  std::vector<torch::Tensor> parts;
  for (const auto& t : buffers) parts.push_back(t.reshape(-1).to(torch::kFloat64));
  torch::Tensor flat = torch::cat(parts).mul_(weight);
  if (flat.is_cuda() && !comm_.reduces_device_buffers()) flat = flat.cpu();
  comm_.allreduce_sum(flat.data_ptr(), static_cast<size_t>(flat.numel()), DType::kFloat64);
  int64_t offset = 0;
  for (auto& t : buffers) {
    t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

Batch Trainer::for_model(Batch b, bool non_blocking) const {
  if (options_.float64 && b.inputs.is_floating_point()) b.inputs = b.inputs.to(torch::kFloat64);
  if (device_.is_cuda()) {
    b.inputs = b.inputs.to(device_, non_blocking);
    b.targets = b.targets.to(device_, non_blocking);
  }
  return b;
}

double Trainer::elapsed() const { return elapsed_offset_ + seconds_since(start_); }

double Trainer::current_lr() const {
  return lr_.at(progress_.step, std::accumulate(plan_.begin(), plan_.end(), int64_t{0}));
}

std::string Trainer::monitor_source() const { return monitor_ ? monitor_->source() : "none"; }

uint64_t Trainer::data_seed(int64_t epoch) const {
  return config_.train.seed ^ (kGoldenGamma * static_cast<uint64_t>(epoch + 1));
}

void Trainer::set_plan(const std::vector<int32_t>& plan) {
  DYNAMIX_CHECK(
      static_cast<int>(plan.size()) == world_,
      "batch plan has " + std::to_string(plan.size()) + " entries for " + std::to_string(world_) + " ranks");
  cancel_prefetch();
  plan_ = plan;
  progress_.plan = plan;
}

double Trainer::fractional_epoch() const {
  return progress_.epoch + static_cast<double>(progress_.cursor) / static_cast<double>(data_.train->size());
}

double Trainer::recent_loss() const {
  if (recent_losses_.empty()) return std::nan("");
  return std::accumulate(recent_losses_.begin(), recent_losses_.end(), 0.0) /
         static_cast<double>(recent_losses_.size());
}

void Trainer::cancel_prefetch() {
  if (!has_next_) return;
  if (!next_empty_) prefetcher_->take();  // discard; the sampler rewinds to what was consumed
  sampler_->set_position(progress_.epoch, progress_.cursor);
  has_next_ = false;
}

void Trainer::prefetch_next(int64_t completed) {
  // The next step's plan is known unless a decision window ends first; a finishing run needs none.
  const auto& t = config_.train;
  if (completed % config_.policy.window == 0 || stop_requested()) return;
  if ((t.max_steps > 0 && completed >= t.max_steps) || fractional_epoch() >= t.epochs - 1e-12) return;
  next_assignment_ = sampler_->next(plan_);
  auto indices = sampler_->indices(next_assignment_, rank_);
  next_empty_ = indices.empty();  // an epoch tail can leave this rank nothing to load
  if (config_.output.sample_log) next_indices_ = indices;
  if (!next_empty_) prefetcher_->submit(std::move(indices), data_seed(next_assignment_.epoch));
  has_next_ = true;
}

bool Trainer::step() {
  StepState s;
  s.start = Clock::now();
  hetero_->on_step(progress_.step);
  s.mine.stop = stop_requested() ? 1.0 : 0.0;
  s.epoch_before = progress_.epoch;
  s.cursor_before = progress_.cursor;
  load_batch(s);
  forward_backward(s);
  if (!reduce_gradients(s)) return false;  // a rank ran out of memory: nothing was applied
  apply_gradients(s);
  record_step(s);
  if (huge_pages_) huge_pages_->advise();  // what this step's new sizes grew the heap by
  return true;
}

void Trainer::load_batch(StepState& s) {
  // Data: this rank's slice of the step, usually loaded in the background during the last step.
  // Out of memory while loading or computing (the batch-size-dependent allocations) is agreed on
  // in reduce_gradients() and recovered from; anywhere else it ends the run.
  const auto t0 = Clock::now();
  if (has_next_) {
    last_assignment_ = next_assignment_;
    has_next_ = false;
    if (config_.output.sample_log) step_indices_ = std::move(next_indices_);
    try {
      if (!next_empty_) s.batch = prefetcher_->take();
    } catch (const c10::OutOfMemoryError& e) {
      s.oom_what = e.what_without_backtrace();
    }
  } else {
    last_assignment_ = sampler_->next(plan_);
    const auto indices = sampler_->indices(last_assignment_, rank_);
    if (config_.output.sample_log) step_indices_ = indices;
    try {
      if (!indices.empty()) s.batch = data_.train->get(indices, data_seed(last_assignment_.epoch));
    } catch (const c10::OutOfMemoryError& e) {
      s.oom_what = e.what_without_backtrace();
    }
  }
  s.n = last_assignment_.counts[static_cast<size_t>(rank_)];
  if (s.n > 0 && s.oom_what.empty()) {
    try {
      // Prefetched batches are on the device already (BatchUploader); one loaded in line is copied.
      s.batch = for_model(std::move(s.batch), /*non_blocking=*/true);
    } catch (const c10::OutOfMemoryError& e) {
      s.oom_what = e.what_without_backtrace();
    }
  }
  s.mine.data_s = seconds_since(t0);
  progress_.epoch = last_assignment_.epoch;
  progress_.cursor = last_assignment_.start + last_assignment_.total();
}

void Trainer::forward_backward(StepState& s) {
  // Forward/backward on the local mean loss, with the next batch loading alongside. With
  // overlap on, backward's hooks pack each gradient (scaled by b_i / B) and full buckets are
  // reduced by the comm thread while backward goes on. Under loss scaling backward runs on
  // loss x S and the packing weight carries 1/S, so the buckets hold unscaled gradients.
  prefetch_next(progress_.step + 1);
  s.loss_scale = scaler_.scale();
  s.weight = static_cast<double>(s.n) / static_cast<double>(last_assignment_.total()) / s.loss_scale;
  s.overlapped = buckets_->overlapped();
  const auto t0 = Clock::now();
  // An emulated fixed cost per step (hetero.step_overhead_ms), timed as compute, not scaled.
  HeteroEmulator::sleep_seconds(hetero_->step_overhead_s());
  const auto c0 = Clock::now();  // the compute the slowdown scales starts here
  model_->train();
  optimizer_->zero_grad();
  if (s.overlapped) {
    buckets_->begin(s.weight);
    hetero_->start_compute();
  }
  if (s.n > 0 && s.oom_what.empty()) {
    try {
      // Autocast covers forward only (with a model's own loss, that too); the loss and backward run
      // outside it, as LibTorch advises.
      const auto loss = objective_->loss(*model_, s.batch.inputs, s.batch.targets);
      if (scaler_.enabled()) {
        (loss * s.loss_scale).backward();
      } else {
        loss.backward();
      }
      s.mine.loss_sum = loss.item<double>() * static_cast<double>(s.n);
    } catch (const c10::OutOfMemoryError& e) {
      s.oom_what = e.what_without_backtrace();  // the graph and the batch go with the stack
    }
  }
  // The batch's buffer is written again by the upload after next (BatchUploader): no kernel may
  // still read it then. loss.item() has synchronized already, unless forward or backward failed.
  synchronize_device(device_);
  s.batch = Batch{};
  s.mine.samples = static_cast<double>(s.n);
  if (s.overlapped) {
    hetero_->pace();  // the emulated slowdown of what backward did after the last full bucket
  } else {
    HeteroEmulator::sleep_seconds(hetero_->compute_delay(seconds_since(c0)));
  }
  s.mine.compute_s = seconds_since(t0);
}

bool Trainer::reduce_gradients(StepState& s) {
  // Overlap: the rest of the buckets (with zeros where backward produced no gradient, e.g. after
  // running out of memory) and the wait for the comm thread; it includes the straggler wait, so
  // it is timed with the allreduce. No collective of ours may run before it.
  const auto t0 = Clock::now();
  if (s.overlapped) s.red = buckets_->finish(s.oom_what.empty());

  // Every rank must have its gradient before any is applied: one small collective.
  const std::vector<int32_t> ooms = agree_on_memory(!s.oom_what.empty(), static_cast<int32_t>(s.n));
  if (!ooms.empty()) {
    recover_from_oom(ooms, s.oom_what, s.epoch_before, s.cursor_before);
    return false;
  }

  // Weighted average: scale by b_i / B while packing, SUM allreduce, unpack. One rank under loss
  // scaling goes through the buckets too (no collective): they unscale and measure the gradient.
  if (world_ > 1 || scaler_.enabled()) {
    if (!s.overlapped) {
      s.red = buckets_->reduce(s.weight);
      HeteroEmulator::sleep_seconds(hetero_->comm_delay(s.red.wire_bytes, s.red.comm_s));
    }
    s.mine.allreduce_s = seconds_since(t0);
    last_reduce_ = s.red;
  }
  return true;
}

void Trainer::apply_gradients(StepState& s) {
  // Loss scaling: every rank computed the same global norm from the same reduced buckets, so all
  // skip the same steps. Then the optimizer step at the learning rate of the planned global batch.
  const bool finite = std::isfinite(s.red.global_sq_norm);
  // Unscaled, nothing would make the next step's gradient finite again: applied, it would ruin the
  // weights. (With loss scaling such a step is skipped and the scale lowered.)
  if (!finite && !scaler_.enabled())
    throw_diverged(progress_.step + 1, "the averaged gradient is not finite");
  last_applied_ = scaler_.update(finite);
  if (finite) {
    // |g_i|^2 of the local mean gradient: the packer saw it before scaling, i.e. times S^2.
    s.mine.local_sq_norm = s.red.local_sq_norm / (s.loss_scale * s.loss_scale);
    last_global_sq_norm_ = s.red.global_sq_norm;
  }
  const auto t0 = Clock::now();
  s.lr = current_lr();
  if (last_applied_) {
    for (auto& group : optimizer_->param_groups()) group.options().set_lr(s.lr);
    optimizer_->step();
  }
  synchronize_device(device_);  // GPU: the step's kernels are done before it is timed
  s.mine.optimizer_s = seconds_since(t0);
}

void Trainer::record_step(StepState& s) {
  // One small collective gives every rank every rank's times, the loss, the stop votes and
  // whether rank 0's outputs failed.
  s.mine.output_failed = outputs_ && outputs_->failed() ? 1.0 : 0.0;
  s.mine.decide = decision_requested_ ? 1.0 : 0.0;
  decision_requested_ = false;
  auto buf = StepExchange::pack(s.mine, rank_, world_);
  if (world_ > 1) comm_.allreduce_sum(buf.data(), buf.size(), DType::kFloat64);
  const StepExchange ex = StepExchange::unpack(buf, world_);
  // Not finite in the forward pass, which no loss scale reaches: diverged, in every precision.
  if (!std::isfinite(ex.loss)) {
    throw_diverged(progress_.step + 1, "the training loss is " + format_number("%g", ex.loss));
  }
  window_.add(ex, rank_, plan_[static_cast<size_t>(rank_)]);
  if (rank_ == 0 && world_ > 1 && last_applied_) {
    std::vector<double> sq;
    for (const auto& l : ex.ranks) sq.push_back(l.local_sq_norm);
    noise_.add(last_assignment_.counts, sq, static_cast<double>(last_assignment_.total()),
               last_global_sq_norm_);
  }
  window_losses_.push_back(ex.loss);
  recent_losses_.push_back(ex.loss);
  if (recent_losses_.size() > kRecentLosses) recent_losses_.pop_front();
  if (last_applied_) window_grad_norms_.push_back(std::sqrt(std::max(0.0, last_global_sq_norm_)));

  ++progress_.step;
  progress_.samples_seen += ex.samples;
  const double step_time = seconds_since(s.start);
  double wait_frac = 0;
  for (double w : ex.wait_s) wait_frac += step_time > 0 ? w / step_time : 0.0;
  progress_.wait_fraction_sum += wait_frac / world_;
  if (console_) report_progress(ex, wait_frac / world_);

  if (config_.output.sample_log) log_samples();
  if (outputs_) write_step_metrics(s, ex, step_time);
  stop_agreed_ = ex.stop;
  output_failed_agreed_ = ex.output_failed;
  decide_agreed_ = ex.decide;
  if (rank_ == 0 && policy_) {
    step_compute_.resize(ex.ranks.size());  // kept: no allocation per step
    for (size_t r = 0; r < step_compute_.size(); ++r) step_compute_[r] = ex.ranks[r].compute_s;
    decision_requested_ = policy_->wants_decision(step_compute_);  // sent with the next step
    // A replayed decision after the next step is asked for now, as the run that made it did.
    if (replay_listed_next()) decision_requested_ = true;
  }
}

void Trainer::report_progress(const StepExchange& ex, double wait_fraction) {
  ProgressStep p;
  p.step = progress_.step;
  p.total_steps = total_steps_hint_;
  p.epoch = fractional_epoch();
  p.wall_time = elapsed();
  p.samples = ex.samples;
  p.loss = recent_loss();
  p.wait_fraction = wait_fraction;
  p.plan = plan_;
  console_->step(p);
}

void Trainer::write_step_metrics(const StepState& s, const StepExchange& ex, double step_time) {
  nlohmann::json comm_line = {{"bytes", last_reduce_.bytes},
                              {"wire_bytes", last_reduce_.wire_bytes},
                              {"overlap", s.overlapped},
                              {"busy_s", last_reduce_.comm_s}};

  if (config_.comm.compression != Compression::kNone) {
    const CodecStats& c = last_reduce_.codec;
    comm_line["codec"] = choice_name(config_.comm.compression);
    comm_line["path"] = c.path;  // what the automatic choice picked for the last bucket
    comm_line["union_density"] = c.union_density;
    comm_line["peeled_fraction"] = c.peeled_fraction;
    comm_line["fallback_count"] = c.fallback_count;
  }
  std::vector<double> compute, data;
  for (const auto& l : ex.ranks) {
    compute.push_back(l.compute_s);
    data.push_back(l.data_s);
  }
  outputs_->metrics({{"step", progress_.step},
                     {"epoch", fractional_epoch()},
                     {"wall_time", elapsed()},
                     {"loss", ex.loss},
                     {"lr", s.lr},
                     {"global_batch", last_assignment_.total()},
                     {"batch_sizes", last_assignment_.counts},
                     {"step_time", step_time},
                     {"compute_time", compute},
                     {"comm_time", ex.comm_s},
                     {"wait_time", ex.wait_s},
                     {"data_time", data},
                     {"throughput", step_time > 0 ? ex.samples / step_time : 0.0},
                     {"monitor_source", monitor_source()},
                     {"comm", comm_line},
                     {"loss_scale", s.loss_scale},
                     {"skipped", !last_applied_}});
}

}  // namespace dynamix
