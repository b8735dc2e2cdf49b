// DYNAMIX — training checkpoints.
#include "framework/train/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "framework/core/error.h"

namespace dynamix {
namespace {

torch::Tensor bytes_tensor(const std::string& s) {
  auto t = torch::empty({static_cast<int64_t>(s.size())}, torch::kUInt8);
  if (!s.empty()) std::memcpy(t.data_ptr<uint8_t>(), s.data(), s.size());
  return t;
}

std::string tensor_bytes(const torch::Tensor& t) {
  auto c = t.contiguous();
  return std::string(reinterpret_cast<const char*>(c.data_ptr<uint8_t>()), static_cast<size_t>(c.numel()));
}

nlohmann::json progress_json(const TrainProgress& p) {
  return {{"step", p.step},
          {"epoch", p.epoch},
          {"cursor", p.cursor},
          {"plan", p.plan},
          {"world_size", p.world_size},
          {"elapsed_s", p.elapsed_s},
          {"samples_seen", p.samples_seen},
          {"wait_fraction_sum", p.wait_fraction_sum},
          {"last_test_accuracy", p.last_test_accuracy},
          {"best_test_accuracy", p.best_test_accuracy},
          {"time_to_target_s", p.time_to_target_s},
          {"windows", p.windows},
          {"last_window_loss", p.last_window_loss},
          {"oom_events", p.oom_events},
          {"batch_max", p.batch_max},
          {"model", p.model},
          {"optimizer", p.optimizer},
          {"policy", p.policy}};
}

TrainProgress read_progress(torch::serialize::InputArchive& ar, const std::string& origin) {
  TrainProgress p;
  try {
    c10::IValue meta;
    ar.read("meta", meta);
    const auto j = nlohmann::json::parse(meta.toStringRef());
    p.step = j.at("step");
    p.epoch = j.at("epoch");
    p.cursor = j.at("cursor");
    p.plan = j.at("plan").get<std::vector<int32_t>>();
    p.world_size = j.at("world_size");
    p.elapsed_s = j.at("elapsed_s");
    p.samples_seen = j.at("samples_seen");
    p.wait_fraction_sum = j.at("wait_fraction_sum");
    p.last_test_accuracy = j.at("last_test_accuracy");
    p.best_test_accuracy = j.at("best_test_accuracy");
    p.time_to_target_s = j.at("time_to_target_s");
    p.windows = j.at("windows");
    p.last_window_loss = j.at("last_window_loss");
    p.oom_events = j.at("oom_events");
    p.batch_max = j.at("batch_max").get<std::vector<int32_t>>();
    p.model = j.at("model");
    p.optimizer = j.at("optimizer");
    p.policy = j.at("policy");
    torch::Tensor t;
    ar.read("policy_state", t);
    p.policy_state = tensor_bytes(t);
    for (int64_t r = 0; r < p.world_size; ++r) {
      ar.read("rng/" + std::to_string(r), t);
      p.rng_states.push_back(tensor_bytes(t));
    }
  } catch (const std::exception& e) {
    throw Error("checkpoint " + origin + ": progress record unreadable: " + e.what());
  }
  return p;
}

torch::serialize::InputArchive open_archive(const std::string& payload, const std::string& origin) {
  torch::serialize::InputArchive ar;
  try {
    std::istringstream in(payload);
    ar.load_from(in);
  } catch (const std::exception& e) {
    throw Error("checkpoint " + origin + ": payload is not a LibTorch archive: " + e.what());
  }
  return ar;
}

}  // namespace

std::string generator_state() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return tensor_bytes(gen.get_state());
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
  auto ar = open_archive(payload, origin);
  return read_progress(ar, origin);
}

TrainProgress decode_checkpoint(const std::string& payload, torch::nn::Module& model,
                                torch::optim::Optimizer& optimizer, const std::string& origin) {
  auto ar = open_archive(payload, origin);
  TrainProgress p = read_progress(ar, origin);
  try {
    torch::serialize::InputArchive model_ar;
    ar.read("model", model_ar);
    model.load(model_ar);
  } catch (const std::exception& e) {
    throw Error("checkpoint " + origin + ": model '" + p.model +
                "' does not match the configured model (" + e.what() + ")");
  }
  try {
    torch::serialize::InputArchive opt_ar;
    ar.read("optimizer", opt_ar);
    optimizer.load(opt_ar);
  } catch (const std::exception& e) {
    throw Error("checkpoint " + origin + ": optimizer state ('" + p.optimizer +
                "') does not match the configured optimizer (" + e.what() + ")");
  }
  return p;
}

}  // namespace dynamix
