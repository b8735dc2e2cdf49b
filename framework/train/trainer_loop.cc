// DYNAMIX — the trainer's outer loop: decision windows, out-of-memory recovery, evaluation, checkpoints,
// summary.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <utility>

#include "agent/plan_projection.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/core/clock.h"
#include "framework/core/error.h"
#include "framework/core/strings.h"
#include "framework/train/device.h"
#include "framework/train/precision.h"
#include "framework/train/signals.h"
#include "framework/train/trainer.h"

namespace dynamix {
namespace {

nlohmann::json nullable(double v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); }

}  // namespace

bool Trainer::finished() const {
  if (config_.train.max_steps > 0 && progress_.step >= config_.train.max_steps) return true;
  return fractional_epoch() >= config_.train.epochs - 1e-12;
}

void Trainer::evaluate_chunk(int64_t first, int64_t count, double sums[3]) {
  std::vector<int64_t> idx(static_cast<size_t>(count));
  std::iota(idx.begin(), idx.end(), first);
  const Batch b = for_model(data_.test->get(idx, config_.train.seed));
  // An emulated slow device is slow at evaluating too: paced as training's compute is.
  hetero_->start_compute();
  objective_->evaluate(*model_, b.inputs, b.targets, sums);
  if (hetero_->slowdown() > 1.0) synchronize_device(device_);  // timed once its kernels are done
  hetero_->pace();
}

std::pair<int64_t, int64_t> Trainer::eval_shard() const {
  // Each rank's share of the test set follows the plan in force, the policy's split by speed, so
  // a slower rank does not hold every other one up at each evaluation (as an even split would).
  const std::vector<int32_t> shares = proportional_split(data_.test->size(), plan_);
  const int64_t begin = std::accumulate(shares.begin(), shares.begin() + rank_, int64_t{0});
  return {begin, begin + shares[static_cast<size_t>(rank_)]};
}

void Trainer::evaluate_range(int64_t begin, int64_t end, double sums[3]) {
  // Out of memory is local to this rank here (no collective until the end): halve the chunk and
  // evaluate the same samples again, as a small device would have to.
  for (int64_t s = begin; s < end;) {
    const int64_t n = std::min(eval_chunk_, end - s);
    try {
      evaluate_chunk(s, n, sums);
      s += n;
    } catch (const c10::OutOfMemoryError& e) {
      if (n == 1) {
        throw Error("rank " + std::to_string(rank_) +
                    " ran out of memory evaluating a single test sample: the model does not fit in that "
                    "rank's memory (" +
                    e.what_without_backtrace() + ")");
      }
      eval_chunk_ = n / 2;
      std::fprintf(stderr,
                   "dynamix: rank %d: evaluation ran out of memory with %lld test samples at once; "
                   "evaluating %lld at a time from now on\n",
                   rank_, static_cast<long long>(n), static_cast<long long>(eval_chunk_));
    }
  }
}

Trainer::Evaluation Trainer::evaluate() {
  average_buffers();
  torch::NoGradGuard no_grad;
  model_->eval();
  const auto t0 = std::chrono::steady_clock::now();
  const auto [begin, end] = eval_shard();
  // Loss x count, correct, counted targets; then each rank's test samples and seconds (only this
  // rank's slots are set here: the sum fills in the others).
  std::vector<double> sums(3 + 2 * static_cast<size_t>(world_), 0.0);
  evaluate_range(begin, end, sums.data());
  synchronize_device(device_);
  const auto slot = [](int r) { return 3 + 2 * static_cast<size_t>(r); };  // rank r's samples, then seconds
  sums[slot(rank_)] = static_cast<double>(end - begin);
  sums[slot(rank_) + 1] = seconds_since(t0);
  if (world_ > 1) comm_.allreduce_sum(sums.data(), sums.size(), DType::kFloat64);
  model_->train();
  Evaluation e;
  e.loss = sums[2] > 0 ? sums[0] / sums[2] : 0.0;
  e.accuracy = sums[2] > 0 ? sums[1] / sums[2] : 0.0;
  for (int r = 0; r < world_; ++r) {
    e.samples.push_back(static_cast<int64_t>(sums[slot(r)]));
    e.seconds.push_back(sums[slot(r) + 1]);
  }
  return e;
}

void Trainer::maybe_evaluate(bool force) {
  const int64_t every = config_.train.eval_every;
  const bool epoch_end = progress_.cursor == data_.train->size();
  const bool due = force || epoch_end || (every > 0 && progress_.step % every == 0);
  if (!due || last_eval_step_ == progress_.step) return;
  last_eval_step_ = progress_.step;
  progress_.last_eval_step = progress_.step;
  const Evaluation result = evaluate();
  const double loss = result.loss, acc = result.accuracy;
  if (!std::isfinite(loss)) {
    throw_diverged(progress_.step, "the test loss is " + format_number("%g", loss) + " (test accuracy " +
                                       format_number("%.4f", acc) + ")");
  }
  const double now = elapsed();
  progress_.last_test_accuracy = acc;
  progress_.best_test_accuracy = std::max(progress_.best_test_accuracy, acc);
  const auto& target = config_.train.target_accuracy;
  if (target && progress_.time_to_target_s < 0 && acc >= *target) progress_.time_to_target_s = now;
  if (outputs_) {
    outputs_->eval({{"step", progress_.step},
                    {"wall_time", now},
                    {"test_loss", loss},
                    {"test_accuracy", acc},
                    {"test_samples", result.samples},
                    {"eval_time", result.seconds}});
  }
  const double thr = now > 0 ? progress_.samples_seen / now : 0.0;
  // None yet when a resumed run evaluates at once.
  const std::string train_loss =
      recent_losses_.empty() ? std::string("n/a") : format_number("%.4f", recent_loss());
  log("[epoch " + format_number("%.2f", fractional_epoch()) + " step " + std::to_string(progress_.step) +
      "] train loss " + train_loss + " | test loss " + format_number("%.4f", loss) + " acc " +
      format_number("%.4f", acc) + " | " + format_number("%.0f", thr) + " samples/s | wait " +
      format_number("%.1f", 100.0 * progress_.wait_fraction_sum / std::max<int64_t>(1, progress_.step)) +
      "% | plan [" + join_plan(plan_) + "] | " + format_number("%.1f", now) + " s");
}

void Trainer::decide_window() {
  // A request made after this very step (rank 0) is answered by this decision: dropped, not sent;
  // but for a replayed decision listed for the next step.
  decision_requested_ = replay_listed_next();
  NodeRecord mine = window_.take(rank_, bounds_.max[static_cast<size_t>(rank_)]);
  mine.oom_events = window_oom_events_;
  window_oom_events_ = 0;
  const auto sample_start = std::chrono::steady_clock::now();
  const MonitorSample m = monitor_ ? monitor_->sample() : MonitorSample{};
  const double monitor_s = seconds_since(sample_start);
  mine.cpu_util_process = m.cpu_util_process;
  mine.cpu_util_machine = m.cpu_util_machine;
  mine.mem_rss_bytes = m.mem_rss_bytes;
  mine.mem_available_bytes = m.mem_available_bytes;
  mine.gpu_util = m.gpu_util;
  mine.gpu_mem_used_bytes = m.gpu_mem_used_bytes;
  mine.gpu_mem_total_bytes = m.gpu_mem_total_bytes;
  mine.gpu_power_w = m.gpu_power_w;
  mine.gpu_sm_clock_mhz = m.gpu_sm_clock_mhz;
  mine.net_tx_bytes_per_s = m.net_tx_bytes_per_s;
  mine.net_rx_bytes_per_s = m.net_rx_bytes_per_s;
  mine.net_retransmits_per_s = m.net_retransmits_per_s;
  mine.net_srtt_us = m.net_srtt_us;
  mine.net_cwnd = m.net_cwnd;
  std::vector<NodeRecord> nodes(rank_ == 0 ? static_cast<size_t>(world_) : 0);
  comm_.gather(&mine, sizeof(NodeRecord), rank_ == 0 ? nodes.data() : nullptr, 0);

  const double loss =
      window_losses_.empty()
          ? 0.0
          : std::accumulate(window_losses_.begin(), window_losses_.end(), 0.0) / window_losses_.size();
  std::vector<int32_t> next = plan_;
  if (rank_ == 0) {
    ClusterState state;
    state.window = progress_.windows;
    state.nodes = std::move(nodes);
    state.bounds = bounds_;
    auto& g = state.global;
    g.step = progress_.step;
    g.epoch = fractional_epoch();
    g.progress =
        std::min(1.0, std::max(g.epoch / config_.train.epochs,
                               total_steps_hint_ > 0 ? double(progress_.step) / total_steps_hint_ : 0.0));
    g.global_batch = std::accumulate(plan_.begin(), plan_.end(), 0);
    g.loss = loss;
    g.loss_trend =
        progress_.last_window_loss > 0 ? (loss - progress_.last_window_loss) / progress_.last_window_loss : 0;
    g.grad_sq_norm = last_global_sq_norm_;
    const double mean_norm = std::accumulate(window_grad_norms_.begin(), window_grad_norms_.end(), 0.0) /
                             std::max<size_t>(1, window_grad_norms_.size());
    double var = 0;
    for (double v : window_grad_norms_) var += (v - mean_norm) * (v - mean_norm);
    g.grad_norm_variance = var / std::max<size_t>(1, window_grad_norms_.size());
    double lo = 1e300, hi = 0;
    for (const auto& r : state.nodes) {
      const double t = r.data_s + r.compute_s;
      lo = std::min(lo, t);
      hi = std::max(hi, t);
    }
    g.step_time_spread = lo > 0 ? hi / lo : 1.0;
    g.last_test_accuracy = progress_.last_test_accuracy;
    g.noise_scale = noise_.noise_scale();

    std::string note;
    BatchPlan plan;
    try {
      plan = policy_->decide(state);
      if (plan_within(plan.batch_sizes, bounds_, static_cast<size_t>(world_), &note)) {
        next = plan.batch_sizes;
      } else if (plan.batch_sizes.size() == static_cast<size_t>(world_)) {
        // E.g. a limit lowered after running out of memory that the policy does not know yet.
        BatchBounds b = bounds_;
        b.max_change = 0;
        next = project_plan(std::vector<double>(plan.batch_sizes.begin(), plan.batch_sizes.end()), plan_, b)
                   .batch_sizes;
        note = "policy returned an infeasible plan (" + note + "); projected onto the limits";
      } else {
        note = "policy returned an infeasible plan (" + note + "); kept the last plan";
      }
    } catch (const std::exception& e) {
      note = std::string("policy failed (") + e.what() + "); kept the last plan";
    }
    if (!note.empty()) log("decision " + std::to_string(progress_.windows) + ": " + note);
    // policy.shadow: the policy's plan is logged, the plan in force kept. policy.replay: the
    // policy's plan is logged, the replayed one put in force where the file has one, else kept.
    std::vector<int32_t> proposed;
    if (config_.policy.shadow || replay_) proposed = std::exchange(next, plan_);
    const bool replay_applied = replay_ && put_replayed_plan(next, note);
    if (outputs_) {
      nlohmann::json line = {
          {"window", progress_.windows},
          {"step", progress_.step},
          {"policy", policy_->name()},
          {"trigger", BatchPolicy::trigger(progress_.step, config_.policy.window)},
          {"actions", plan.actions},
          {"plan", next},
          {"reward", plan.has_reward ? nlohmann::json(plan.reward) : nlohmann::json(nullptr)}};
      if (!plan.note.empty() || !note.empty()) line["note"] = note.empty() ? plan.note : note;
      if (config_.policy.shadow || replay_) line["proposed"] = proposed;
      if (replay_) line["replayed"] = replay_applied;
      nlohmann::json recs = nlohmann::json::array();
      for (const auto& r : state.nodes) {
        recs.push_back({{"rank", r.rank},
                        {"batch", r.batch_size},
                        {"compute_s", r.compute_s},
                        {"comm_s", r.comm_s},
                        {"wait_s", r.wait_s},
                        {"data_s", r.data_s},
                        {"samples_per_s", r.samples_per_s},
                        {"cpu_util", r.cpu_util_process},
                        {"rss_bytes", r.mem_rss_bytes},
                        {"net_tx_bytes_per_s", r.net_tx_bytes_per_s},
                        {"net_rx_bytes_per_s", r.net_rx_bytes_per_s},
                        {"net_retransmits_per_s", r.net_retransmits_per_s},
                        {"net_srtt_us", r.net_srtt_us}});
      }
      line["nodes"] = recs;
      if (!pending_oom_.empty()) {
        line["oom"] = pending_oom_;
        pending_oom_.clear();
      }
      line["loss"] = loss;
      line["noise_scale"] = g.noise_scale;
      line["monitor_source"] = monitor_source();
      line["monitor_sample_s"] = monitor_s;  // rank 0's probe read-out cost this window
      outputs_->decision(line);
    }
  }
  comm_.broadcast(next.data(), next.size(), DType::kInt32, 0);
  set_plan(next);
  progress_.last_window_loss = loss;
  ++progress_.windows;
  window_losses_.clear();
  window_grad_norms_.clear();
}

bool Trainer::replay_listed_next() const { return replay_ && replay_->plan_after(progress_.step + 1); }

bool Trainer::put_replayed_plan(std::vector<int32_t>& next, std::string& note) {
  const std::vector<int32_t>* replayed = replay_->plan_after(progress_.step);
  if (!replayed) return false;
  // A policy's plan keeps a fixed B by its projection; a replayed one is checked for it here.
  std::string why;
  bool fits = plan_within(*replayed, bounds_, static_cast<size_t>(world_), &why);
  const int64_t b = std::accumulate(replayed->begin(), replayed->end(), int64_t{0});
  if (fits && bounds_.fixed_global && b != bounds_.global_batch) {
    fits = false;
    why = "B = " + std::to_string(b) + " in a run of fixed B = " + std::to_string(bounds_.global_batch);
  }
  if (fits) {
    next = *replayed;
  } else {
    note = "replayed plan outside this run's limits (" + why + "); kept the last plan";
    log("decision " + std::to_string(progress_.windows) + ": " + note);
  }
  return fits;
}

std::vector<int32_t> Trainer::agree_on_memory(bool out_of_memory, int32_t batch) {
  int64_t any = out_of_memory ? 1 : 0;
  if (world_ > 1) comm_.allreduce_max(&any, 1, DType::kInt64);
  if (any == 0) return {};
  const int32_t mine = out_of_memory ? batch : 0;
  std::vector<int32_t> all(static_cast<size_t>(world_), mine);
  if (world_ > 1) comm_.allgather(&mine, sizeof(int32_t), all.data());
  return all;
}

void Trainer::recover_from_oom(const std::vector<int32_t>& ooms, const std::string& what, int64_t epoch,
                               int64_t cursor) {
  // Nothing of this step is applied: every rank drops its gradient and the step is redone with
  // the repaired plan from the same sampler position, so no sample is skipped or repeated.
  optimizer_->zero_grad();
  if (!what.empty()) std::fprintf(stderr, "dynamix: rank %d: %s\n", rank_, what.c_str());
  std::string who;
  const int32_t least = least_batch(bounds_);
  for (int r = 0; r < world_; ++r) {
    const int32_t b = ooms[static_cast<size_t>(r)];
    if (b == 0) continue;
    int32_t& cap = bounds_.max[static_cast<size_t>(r)];
    if (b <= least) {
      throw Error("rank " + std::to_string(r) + " ran out of memory at batch " + std::to_string(b) +
                  ", the smallest allowed (batch.min" + (bounds_.multiple > 1 ? ", batch.multiple" : "") +
                  "): the model does not fit in that rank's memory");
    }
    // A quarter below the failing size: a few retries find the limit without giving up much.
    cap = std::min(cap, std::max(least, b - std::max(1, b / 4)));
    if (r == rank_) ++window_oom_events_;
    ++progress_.oom_events;
    who += (who.empty() ? "" : ", ") + std::to_string(r) + " at batch " + std::to_string(b) + " (limit now " +
           std::to_string(cap) + ")";
    if (rank_ == 0) {
      pending_oom_.push_back({{"step", progress_.step}, {"rank", r}, {"batch", b}, {"batch_max", cap}});
    }
  }
  std::vector<double> desired(plan_.begin(), plan_.end());
  BatchBounds repair = bounds_;
  repair.max_change = 0;
  const BatchPlan fixed = project_plan(std::move(desired), plan_, repair);
  progress_.epoch = epoch;
  progress_.cursor = cursor;
  set_plan(fixed.batch_sizes);
  sampler_->set_position(epoch, cursor);
  log("step " + std::to_string(progress_.step + 1) + ": out of memory on rank " + who +
      "; step redone with plan [" + join_plan(plan_) + "]" +
      (fixed.note.empty() ? "" : " (" + fixed.note + ")"));
}

void Trainer::save_checkpoint() {
  average_buffers();  // the checkpoint holds rank 0's model: every rank's statistics, averaged
  // Every rank's generator state travels to rank 0 so a resume continues each stream exactly.
  const std::string mine = generator_state();
  int64_t len = static_cast<int64_t>(mine.size());
  comm_.allreduce_max(&len, 1, DType::kInt64);
  DYNAMIX_CHECK(static_cast<int64_t>(mine.size()) == len, "generator state sizes differ across ranks");
  std::string all(static_cast<size_t>(len) * world_, '\0');
  comm_.gather(mine.data(), mine.size(), rank_ == 0 ? all.data() : nullptr, 0);
  if (rank_ != 0 || !outputs_ || outputs_->failed()) return;  // after a failed write, nothing more
  progress_.rng_states.clear();
  for (int r = 0; r < world_; ++r)
    progress_.rng_states.push_back(all.substr(static_cast<size_t>(r * len), len));
  progress_.elapsed_s = elapsed();
  progress_.plan = plan_;
  progress_.batch_max = bounds_.max;
  progress_.loss_scale = scaler_.enabled() ? scaler_.scale() : 0.0;
  progress_.loss_scale_good_steps = scaler_.good_steps();
  progress_.skipped_steps = scaler_.skipped_steps();
  progress_.policy_state = policy_ ? policy_->save_state() : "";
  progress_.window_losses = window_losses_;
  progress_.window_grad_norms = window_grad_norms_;
  outputs_->write_checkpoint(encode_checkpoint(*model_, *optimizer_, progress_));
  if (!outputs_->failed()) last_checkpoint_step_ = progress_.step;
}

void Trainer::check_outputs_written() {
  int64_t failed = outputs_ && outputs_->failed() ? 1 : 0;
  if (world_ > 1) comm_.allreduce_max(&failed, 1, DType::kInt64);
  if (failed) throw_output_error();
}

std::string Trainer::checkpoint_kept() const {
  return last_checkpoint_step_ >= 0
             ? "the checkpoint of step " + std::to_string(last_checkpoint_step_) + " is kept"
             : "no checkpoint was written";
}

void Trainer::throw_output_error() const {
  if (!outputs_) throw OutputWriteError("rank 0 could not write the run's outputs; stopped");
  const std::string resume = last_checkpoint_step_ >= 0 ? ": free space and pass --resume to continue" : "";
  throw OutputWriteError(outputs_->error() + "; run stopped at step " + std::to_string(progress_.step) +
                         " (" + checkpoint_kept() + resume + ")");
}

void Trainer::throw_diverged(int64_t step, const std::string& what) const {
  throw DivergedError("training diverged at step " + std::to_string(step) + ": " + what +
                      "; no output of it was written and " + checkpoint_kept() + ". Lower train.lr (" +
                      format_number("%g", config_.train.lr) + " here) or check the data and train.loss");
}

bool Trainer::run() {
  install_stop_signal_handlers();
  const std::string idle_wait = mpi_idle_wait();
  log("dynamix: " + std::to_string(world_) + " ranks, backend " + comm_.backend() + ", model " +
      config_.model + ", dataset " + config_.dataset.name + " (" + std::to_string(data_.train->size()) +
      " train / " + std::to_string(data_.test->size()) + " test), policy " + config_.policy.name +
      ", plan [" + join_plan(plan_) + "], monitor " + monitor_source() + ", " +
      std::to_string(buckets_->num_buckets()) + " gradient bucket(s) of " +
      format_number("%.1f", buckets_->total_bytes() / 1048576.0) + " MB in all" +
      (idle_wait.empty() ? "" : ", MPI waits " + idle_wait));
  const int64_t window = config_.policy.window;
  const int64_t ckpt_every = config_.output.checkpoint_every;
  // An error leaves the run mid-line: the progress line goes first (tty), so the error reads whole.
  struct EndLine {
    ProgressConsole* console;
    ~EndLine() {
      if (console) console->end_line();
    }
  } end_line{console_.get()};
  if (console_) console_->begin(progress_.step);
  window_.set_aside_startup();  // this process's first steps pay one-time costs (step_stats.h)
  bool stopped = false;
  while (!finished()) {
    if (!step()) continue;  // out of memory: plan repaired, the same step again
    // A failed write (rank 0's outputs) stops every rank here, with nothing more written.
    if (output_failed_agreed_) throw_output_error();
    // Every `window` steps, and sooner when the policy saw a change (BatchPolicy::wants_decision).
    if (progress_.step % window == 0 || decide_agreed_) decide_window();
    maybe_evaluate(false);
    if (stop_agreed_) {
      log("stop signal received: checkpointing at step " + std::to_string(progress_.step) + " and exiting");
      save_checkpoint();
      stopped = true;
      break;
    }
    if (ckpt_every > 0 && progress_.step % ckpt_every == 0) save_checkpoint();
  }
  if (!stopped) {
    maybe_evaluate(true);
    save_checkpoint();
  }
  if (outputs_) outputs_->write_policy(progress_.policy_state);  // serialized by that checkpoint
  write_summary();
  check_outputs_written();  // the last checkpoint and the summary, or a write since the last step
  if (!stopped && console_) console_->result(run_summary_line(), summary());
  return stopped;
}

std::string Trainer::run_summary_line() const {
  const double t = elapsed();
  std::string s =
      "result: " + std::to_string(world_) + " ranks, policy " + config_.policy.name + ", " +
      std::to_string(progress_.step) + " steps, " + format_number("%.2f", fractional_epoch()) +
      " epochs in " + format_number("%.1f", t) + " s, final test accuracy " +
      format_number("%.4f", progress_.last_test_accuracy) + " (best " +
      format_number("%.4f", progress_.best_test_accuracy) + "), " +
      format_number("%.0f", t > 0 ? progress_.samples_seen / t : 0) + " samples/s, wait " +
      format_number("%.1f", 100.0 * progress_.wait_fraction_sum / std::max<int64_t>(1, progress_.step)) + "%";
  if (config_.train.target_accuracy) {
    s += progress_.time_to_target_s >= 0
             ? ", time to " + format_number("%.2f", *config_.train.target_accuracy) + ": " +
                   format_number("%.1f", progress_.time_to_target_s) + " s"
             : ", target " + format_number("%.2f", *config_.train.target_accuracy) + " not reached";
  }
  return s;
}

nlohmann::json Trainer::summary() const {
  const double t = elapsed();
  nlohmann::json s = {
      {"world_size", world_},
      {"policy", config_.policy.name},
      {"model", config_.model},
      {"dataset", config_.dataset.name},
      {"steps", progress_.step},
      {"epochs", fractional_epoch()},
      {"total_time_s", t},
      {"final_test_accuracy", nullable(progress_.last_test_accuracy)},
      {"best_test_accuracy", nullable(progress_.best_test_accuracy)},
      {"target_accuracy", config_.train.target_accuracy ? nlohmann::json(*config_.train.target_accuracy)
                                                        : nlohmann::json(nullptr)},
      {"time_to_target_s", nullable(progress_.time_to_target_s)},
      {"mean_throughput", t > 0 ? progress_.samples_seen / t : 0.0},
      {"mean_wait_fraction", progress_.wait_fraction_sum / std::max<int64_t>(1, progress_.step)},
      {"monitor_source", monitor_source()},
      {"backend", comm_.backend()},
      {"oom_events", progress_.oom_events},
      {"completed", finished()}};
  return s;
}

void Trainer::write_summary() {
  if (outputs_) outputs_->write_summary(summary());
}

}  // namespace dynamix
