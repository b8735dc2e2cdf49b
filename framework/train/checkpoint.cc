// DYNAMIX — training checkpoints.
#include "framework/train/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "framework/core/archive_check.h"
#include "framework/core/error.h"
#include "framework/core/tensor_checks.h"

namespace dynamix {
namespace {

torch::Tensor bytes_tensor(const std::string& s) {
  auto t = torch::empty({static_cast<int64_t>(s.size())}, torch::kUInt8);
  if (!s.empty()) std::memcpy(t.data_ptr<uint8_t>(), s.data(), s.size());
  return t;
}

// The bytes of a 1-D uint8 tensor as bytes_tensor writes it. Anything else is refused before it
// is copied: an archive may hold a broadcast view (stride 0) of one stored byte that claims
// gigabytes, which contiguous() would materialize (the fuzzer's out-of-memory, fuzz_checkpoint).
std::string tensor_bytes(const torch::Tensor& t, const std::string& key) {
  if (t.scalar_type() != torch::kUInt8 || t.dim() != 1 || !t.is_contiguous()) {
    throw Error("'" + key + "' is not a byte string (" + tensor_layout(t) +
                (t.is_contiguous() ? "" : ", a strided view") + ")");
  }
  // The archive may have been loaded onto a GPU (map_location): bytes are read on the host.
  const auto c = t.to(torch::kCPU);
  return std::string(reinterpret_cast<const char*>(c.data_ptr<uint8_t>()), static_cast<size_t>(c.numel()));
}

nlohmann::json progress_json(const TrainProgress& p) {
  return {{"step", p.step},
          {"epoch", p.epoch},
          {"cursor", p.cursor},
          {"plan", p.plan},
          {"base_batch", p.base_batch},
          {"world_size", p.world_size},
          {"elapsed_s", p.elapsed_s},
          {"samples_seen", p.samples_seen},
          {"wait_fraction_sum", p.wait_fraction_sum},
          {"last_test_accuracy", p.last_test_accuracy},
          {"last_eval_step", p.last_eval_step},
          {"best_test_accuracy", p.best_test_accuracy},
          {"time_to_target_s", p.time_to_target_s},
          {"windows", p.windows},
          {"last_window_loss", p.last_window_loss},
          {"window_losses", p.window_losses},
          {"window_grad_norms", p.window_grad_norms},
          {"oom_events", p.oom_events},
          {"batch_max", p.batch_max},
          {"loss_scale", p.loss_scale},
          {"loss_scale_good_steps", p.loss_scale_good_steps},
          {"skipped_steps", p.skipped_steps},
          {"model", p.model},
          {"optimizer", p.optimizer},
          {"policy", p.policy}};
}

// An integer field that fits T. nlohmann converts a JSON float to an integer with a bare cast,
// undefined outside T's range (found by fuzz_checkpoint), so floats are refused.
template <typename T>
T integer_of(const nlohmann::json& v, const std::string& key) {
  if (!v.is_number_integer()) throw Error("'" + key + "' is not an integer: " + v.dump());
  const bool fits = v.is_number_unsigned()
                        ? v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
                        : v.get<int64_t>() >= std::numeric_limits<T>::min() &&
                              v.get<int64_t>() <= std::numeric_limits<T>::max();
  if (!fits) throw Error("'" + key + "' is out of range: " + v.dump());
  return static_cast<T>(v.get<int64_t>());
}

std::vector<int32_t> int32_list_of(const nlohmann::json& v, const std::string& key) {
  if (!v.is_array()) throw Error("'" + key + "' is not a list: " + v.dump());
  std::vector<int32_t> out;
  for (size_t i = 0; i < v.size(); ++i) {
    out.push_back(integer_of<int32_t>(v[i], key + "[" + std::to_string(i) + "]"));
  }
  return out;
}

// A list of numbers; null stands for a non-finite value (JSON has none: nlohmann writes null).
std::vector<double> double_list_of(const nlohmann::json& v, const std::string& key) {
  if (!v.is_array()) throw Error("'" + key + "' is not a list: " + v.dump());
  std::vector<double> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_null() && !v[i].is_number()) {
      throw Error("'" + key + "[" + std::to_string(i) + "]' is not a number: " + v[i].dump());
    }
    out.push_back(v[i].is_null() ? std::numeric_limits<double>::quiet_NaN() : v[i].get<double>());
  }
  return out;
}

TrainProgress read_progress(torch::serialize::InputArchive& ar, const std::string& origin) {
  TrainProgress p;
  try {
    c10::IValue meta;
    ar.read("meta", meta);
    const auto j = nlohmann::json::parse(meta.toStringRef());
    p.step = integer_of<int64_t>(j.at("step"), "step");
    p.epoch = integer_of<int64_t>(j.at("epoch"), "epoch");
    p.cursor = integer_of<int64_t>(j.at("cursor"), "cursor");
    p.plan = int32_list_of(j.at("plan"), "plan");
    p.world_size = integer_of<int64_t>(j.at("world_size"), "world_size");
    // Absent in checkpoints written before it existed: unknown (0).
    if (j.contains("base_batch")) p.base_batch = integer_of<int64_t>(j.at("base_batch"), "base_batch");
    p.elapsed_s = j.at("elapsed_s");
    p.samples_seen = j.at("samples_seen");
    p.wait_fraction_sum = j.at("wait_fraction_sum");
    p.last_test_accuracy = j.at("last_test_accuracy");
    p.best_test_accuracy = j.at("best_test_accuracy");
    // The step last evaluated (absent in checkpoints written before it existed: unknown, -1).
    if (j.contains("last_eval_step")) {
      p.last_eval_step = integer_of<int64_t>(j.at("last_eval_step"), "last_eval_step");
    }
    p.time_to_target_s = j.at("time_to_target_s");
    p.windows = integer_of<int64_t>(j.at("windows"), "windows");
    p.last_window_loss = j.at("last_window_loss");
    // The window in progress (absent in checkpoints written before it was kept: empty).
    if (j.contains("window_losses")) p.window_losses = double_list_of(j.at("window_losses"), "window_losses");
    if (j.contains("window_grad_norms")) {
      p.window_grad_norms = double_list_of(j.at("window_grad_norms"), "window_grad_norms");
    }
    p.oom_events = integer_of<int64_t>(j.at("oom_events"), "oom_events");
    p.batch_max = int32_list_of(j.at("batch_max"), "batch_max");
    // Loss-scaling state (absent in checkpoints written before it existed).
    if (j.contains("loss_scale")) {
      p.loss_scale = j.at("loss_scale");
      p.loss_scale_good_steps = integer_of<int64_t>(j.at("loss_scale_good_steps"), "loss_scale_good_steps");
      p.skipped_steps = integer_of<int64_t>(j.at("skipped_steps"), "skipped_steps");
    }
    p.model = j.at("model");
    p.optimizer = j.at("optimizer");
    p.policy = j.at("policy");
    // The trainer indexes plan and RNG states by rank: accept only what a run writes (fuzz_checkpoint).
    if (p.world_size < 1 || p.plan.size() != static_cast<size_t>(p.world_size)) {
      throw Error("'plan' has " + std::to_string(p.plan.size()) + " entries for world_size " +
                  std::to_string(p.world_size));
    }
    for (int32_t b : p.plan) {
      if (b < 1) throw Error("'plan' holds batch size " + std::to_string(b));
    }
    if (p.base_batch < 0) throw Error("'base_batch' is negative: " + j.dump());
    if (p.last_eval_step < -1 || p.last_eval_step > p.step) {
      throw Error("'last_eval_step' must be -1 or a step in 0..step: " + j.dump());
    }
    if (p.step < 0 || p.epoch < 0 || p.cursor < 0 || p.windows < 0 || p.oom_events < 0 ||
        p.loss_scale_good_steps < 0 || p.skipped_steps < 0) {
      throw Error("negative step, epoch, cursor, windows, oom_events or loss-scale counters: " + j.dump());
    }
    if (!(p.loss_scale == 0 || (p.loss_scale >= 1 && std::isfinite(p.loss_scale)))) {
      throw Error("'loss_scale' must be 0 (not in use) or a finite number >= 1: " + j.dump());
    }
    torch::Tensor t;
    ar.read("policy_state", t);
    p.policy_state = tensor_bytes(t, "policy_state");
    for (int64_t r = 0; r < p.world_size; ++r) {
      const std::string key = "rng/" + std::to_string(r);
      ar.read(key, t);
      p.rng_states.push_back(tensor_bytes(t, key));
    }
  } catch (const std::exception& e) {
    throw Error("checkpoint " + origin + ": progress record unreadable: " + e.what());
  }
  return p;
}

// LibTorch's errors carry a C++ backtrace in what(): the first line is the message.
std::string without_backtrace(const std::exception& e) {
  if (const auto* ce = dynamic_cast<const c10::Error*>(&e)) return ce->what_without_backtrace();
  return e.what();
}

// LibTorch's Module::load swaps in each stored tensor whatever its shape (Tensor::set_) and
// reinterprets the bytes of another dtype, so a checkpoint of another model loaded silently
// (fuzz_checkpoint found the shapes, its regression test the dtypes). Checks every parameter
// and buffer first, walking the archive as Module::load does; load() reports missing entries.
void check_layout(const torch::nn::Module& module, torch::serialize::InputArchive& ar,
                  const std::string& prefix) {
  auto check = [&](const std::string& key, const torch::Tensor& want, bool is_buffer) {
    torch::Tensor stored;
    if (!ar.try_read(key, stored, is_buffer) || !stored.defined()) return;
    if (stored.sizes() != want.sizes() || stored.dtype() != want.dtype()) {
      throw Error("'" + prefix + key + "' is " + tensor_layout(stored) + " in the checkpoint, " +
                  tensor_layout(want) + " in the model");
    }
    // A broadcast view (elements sharing memory) loads, and the optimizer's in-place update fails.
    if (is_broadcast_view(stored)) {
      throw Error("'" + prefix + key + "' is a broadcast view in the checkpoint (its elements share memory)");
    }
  };
  for (const auto& p : module.named_parameters(/*recurse=*/false)) check(p.key(), p.value(), false);
  for (const auto& b : module.named_buffers(/*recurse=*/false)) check(b.key(), b.value(), true);
  for (const auto& child : module.named_children()) {
    torch::serialize::InputArchive child_ar;
    if (child.value()->is_serializable() && ar.try_read(child.key(), child_ar)) {
      check_layout(*child.value(), child_ar, prefix + child.key() + ".");
    }
  }
}

// Tensors land on `device` (map_location): a checkpoint written on a GPU resumes on a CPU, and back.
torch::serialize::InputArchive open_archive(const std::string& payload, const std::string& origin,
                                            c10::optional<torch::Device> device = c10::nullopt) {
  // The container's CRC covers the payload on a file read; this covers payloads from elsewhere
  // (and costs one more CRC pass): LibTorch's reader crashes on damaged module source.
  check_zip_archive(payload, "checkpoint " + origin);
  torch::serialize::InputArchive ar;
  try {
    std::istringstream in(payload);
    ar.load_from(in, device);
  } catch (const std::exception& e) {
    throw Error("checkpoint " + origin + ": payload is not a LibTorch archive: " + e.what());
  }
  return ar;
}

}  // namespace

std::string generator_state() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return tensor_bytes(gen.get_state(), "generator state");
}

void set_generator_state(const std::string& state) {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(bytes_tensor(state));
}

std::string encode_checkpoint(torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                              const TrainProgress& progress) {
  torch::serialize::OutputArchive ar;
  ar.write("meta", c10::IValue(progress_json(progress).dump()));
  ar.write("policy_state", bytes_tensor(progress.policy_state));
  for (size_t r = 0; r < progress.rng_states.size(); ++r) {
    ar.write("rng/" + std::to_string(r), bytes_tensor(progress.rng_states[r]));
  }
  torch::serialize::OutputArchive model_ar, opt_ar;
  model.save(model_ar);
  optimizer.save(opt_ar);
  ar.write("model", model_ar);
  ar.write("optimizer", opt_ar);
  std::ostringstream out;
  ar.save_to(out);
  return out.str();
}

TrainProgress peek_checkpoint(const std::string& payload, const std::string& origin) {
  auto ar = open_archive(payload, origin, torch::Device(torch::kCPU));  // written on a GPU or not
  return read_progress(ar, origin);
}

TrainProgress decode_checkpoint(const std::string& payload, torch::nn::Module& model,
                                torch::optim::Optimizer& optimizer, const std::string& origin,
                                const std::string& optimizer_name) {
  c10::optional<torch::Device> device;
  const auto params = model.parameters();
  if (!params.empty()) device = params.front().device();
  auto ar = open_archive(payload, origin, device);
  TrainProgress p = read_progress(ar, origin);
  if (!optimizer_name.empty() && p.optimizer != optimizer_name) {
    throw Error("checkpoint " + origin + " was written with optimizer '" + p.optimizer +
                "', the configuration asks for '" + optimizer_name +
                "' (train.optimizer): resume with the same optimizer, or start a new run");
  }
  try {
    torch::serialize::InputArchive model_ar;
    ar.read("model", model_ar);
    check_layout(model, model_ar, "");
    model.load(model_ar);
  } catch (const std::exception& e) {
    throw Error("checkpoint " + origin + ": model '" + p.model + "' does not match the configured model (" +
                without_backtrace(e) + ")");
  }
  try {
    torch::serialize::InputArchive opt_ar;
    ar.read("optimizer", opt_ar);
    optimizer.load(opt_ar);
  } catch (const std::exception& e) {
    throw Error("checkpoint " + origin + ": optimizer state ('" + p.optimizer +
                "') does not match the configured optimizer (" + without_backtrace(e) + ")");
  }
  return p;
}

}  // namespace dynamix
