// DYNAMIX — optimizer state from either LibTorch's archive (optimizer_archive.h).
#include "framework/train/optimizer_archive.h"

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/optimizer_state.h"
#include "framework/core/tensor_checks.h"

namespace dynamix {
namespace {

using torch::serialize::InputArchive;

// A parameter's name in the archive, as the address it prints: "0x..." (1.13) or decimal (2.x).
uint64_t address_of(const std::string& name) {
  size_t used = 0;
  uint64_t address = 0;
  try {
    address = std::stoull(name, &used, 0);
  } catch (const std::exception&) {
    used = 0;
  }
  if (name.empty() || used != name.size()) {
    throw Error("optimizer state: parameter name '" + name + "' is not an address");
  }
  return address;
}

int64_t count_at(InputArchive& archive, const std::string& key) {
  torch::Tensor t;
  archive.read(key, t);
  DYNAMIX_CHECK(t.numel() == 1, "optimizer state: '" + key + "' is not a count");
  return t.item<int64_t>();
}

// The archive's parameter names, group by group.
std::vector<std::vector<uint64_t>> group_addresses(InputArchive& archive) {
  InputArchive groups;
  archive.read("param_groups", groups);
  const int64_t n = count_at(groups, "param_groups/size");
  DYNAMIX_CHECK(n >= 0 && n < (int64_t{1} << 20), "optimizer state: bad number of parameter groups");
  std::vector<std::vector<uint64_t>> out(static_cast<size_t>(n));
  for (int64_t g = 0; g < n; ++g) {
    InputArchive group;
    groups.read("param_groups/" + std::to_string(g), group);
    const int64_t size = count_at(group, "params/size");
    DYNAMIX_CHECK(size >= 0 && size < (int64_t{1} << 24), "optimizer state: bad parameter count");
    for (int64_t k = 0; k < size; ++k) {
      c10::IValue name;
      group.read("params/" + std::to_string(k), name);
      DYNAMIX_CHECK(name.isString(), "optimizer state: a parameter name is not a string");
      out[static_cast<size_t>(g)].push_back(address_of(name.toStringRef()));
    }
  }
  return out;
}

// A state tensor must be the parameter's shape, type and device, its own memory (the update is in
// place).
void check_fits(const std::string& what, const torch::Tensor& t, const torch::Tensor& param, bool required) {
  if (!t.defined() && !required) return;
  DYNAMIX_CHECK(t.defined(), "optimizer state: '" + what + "' is missing");
  DYNAMIX_CHECK(
      t.sizes() == param.sizes() && t.dtype() == param.dtype(),
      "optimizer state: '" + what + "' is " + tensor_layout(t) + ", its parameter " + tensor_layout(param));
  DYNAMIX_CHECK(t.device() == param.device(), "optimizer state: '" + what + "' is on " + t.device().str() +
                                                  ", its parameter on " + param.device().str());
  DYNAMIX_CHECK(!is_broadcast_view(t), "optimizer state: '" + what + "' is a broadcast view");
}

void check_fits(const torch::optim::SGDParamState& s, const torch::Tensor& param) {
  check_fits("momentum_buffer", s.momentum_buffer(), param, true);
}

void check_fits(const torch::optim::AdamWParamState& s, const torch::Tensor& param) {
  check_fits("exp_avg", s.exp_avg(), param, true);
  check_fits("exp_avg_sq", s.exp_avg_sq(), param, true);
  check_fits("max_exp_avg_sq", s.max_exp_avg_sq(), param, false);  // amsgrad only
  DYNAMIX_CHECK(s.step() >= 0, "optimizer state: negative step");
}

}  // namespace

template <class State>
void load_param_states(InputArchive& archive, torch::optim::Optimizer& optimizer) {
  const auto saved_groups = group_addresses(archive);
  auto& groups = optimizer.param_groups();
  DYNAMIX_CHECK(saved_groups.size() == groups.size(),
                "optimizer state has " + std::to_string(saved_groups.size()) +
                    " parameter group(s), the optimizer " + std::to_string(groups.size()));
  InputArchive states;
  archive.read("state", states);
  std::map<uint64_t, std::string> state_names;  // address -> the name its state is stored under
  for (const auto& name : states.keys()) state_names[address_of(name)] = name;
  // Every state is read and checked before any is installed: a bad archive leaves the optimizer as
  // it was.
  std::vector<std::pair<torch::Tensor, std::unique_ptr<State>>> loaded;
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& params = groups[g].params();
    DYNAMIX_CHECK(saved_groups[g].size() == params.size(),
                  "optimizer state: parameter group " + std::to_string(g) + " has " +
                      std::to_string(saved_groups[g].size()) + " parameters, the optimizer's " +
                      std::to_string(params.size()));
    for (size_t k = 0; k < params.size(); ++k) {
      auto it = state_names.find(saved_groups[g][k]);
      if (it == state_names.end()) continue;  // no state yet (no step, or no gradient so far)
      InputArchive saved;
      states.read(it->second, saved);
      auto state = std::make_unique<State>();
      state->serialize(saved);
      check_fits(*state, params[k]);
      loaded.emplace_back(params[k], std::move(state));
    }
  }
  for (auto& [param, state] : loaded)
    optimizer.state()[optimizer_state_key(optimizer, param)] = std::move(state);
}

template void load_param_states<torch::optim::SGDParamState>(InputArchive&, torch::optim::Optimizer&);
template void load_param_states<torch::optim::AdamWParamState>(InputArchive&, torch::optim::Optimizer&);

}  // namespace dynamix
