// DYNAMIX tests — a dynamix policy archive laid out as DynamixPolicy writes it, with chosen parts
// replaced: the policy tests and the policy fuzz target build their inputs with it.
#pragma once

#include <torch/torch.h>

#include <map>
#include <random>
#include <sstream>
#include <string>

#include "agent/ppo/ppo_config.h"
#include "agent/ppo/ppo_learner.h"
#include "agent/ppo/state_encoder.h"

namespace dynamix::testing {

// A small policy (16x16 network, updates inside decide) for inputs that are built in numbers.
inline PpoConfig small_policy_config() {
  PpoConfig c;
  c.hidden = {16, 16};
  c.background_update = false;
  return c;
}

// A fresh network of `net_config`, neutral normalisers, `config_text` as the stored config, and the
// tensors in `replace` written instead of their own.
inline std::string policy_archive(const std::map<std::string, torch::Tensor>& replace,
                                  const PpoConfig& net_config, const std::string& config_text) {
  PpoLearner learner(net_config, kNodeFeatures, kGlobalFeatures);
  torch::serialize::OutputArchive a, net;
  a.write("format", c10::IValue(std::string("dynamix-ppo/2")));
  a.write("config", c10::IValue(config_text));
  learner.net()->save(net);
  a.write("net", net);
  std::map<std::string, torch::Tensor> tensors = {
      {"norm.node.mean", torch::zeros({kNodeFeatures}, torch::kDouble)},
      {"norm.node.var", torch::ones({kNodeFeatures}, torch::kDouble)},
      {"norm.node.count", torch::ones({1}, torch::kDouble)},
      {"norm.global.mean", torch::zeros({kGlobalFeatures}, torch::kDouble)},
      {"norm.global.var", torch::ones({kGlobalFeatures}, torch::kDouble)},
      {"norm.global.count", torch::ones({1}, torch::kDouble)},
      {"updates", torch::zeros({1}, torch::kLong)}};
  for (const auto& [key, t] : replace) tensors[key] = t;
  for (const auto& [key, t] : tensors) a.write(key, t);
  std::ostringstream rng;
  rng << std::mt19937_64(1) << ' ' << learner.rng();
  a.write("rng", c10::IValue(rng.str()));
  std::ostringstream out;
  a.save_to(out);
  return out.str();
}

}  // namespace dynamix::testing
