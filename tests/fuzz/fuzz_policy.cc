// DYNAMIX fuzz target — reading a dynamix policy (a `policy.checkpoint` file, or the policy state
// inside a training checkpoint) and deciding with what was read.
// Input: [mode][rest], by mode % 3:
//   0: rest is a policy file.
//   1: rest is appended to a valid stored PPO config (its lines override earlier ones); the network
//      stored beside it has the layout the combined text describes, where that text parses.
//   2: rest replaces one stored tensor: [entry][dtype][length][value bytes...] (see replaced).
// A policy that loads must decide: its plans for a few cluster states are feasible.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>

#include "agent/ppo/dynamix_policy.h"
#include "framework/core/error.h"
#include "tests/agent/policy_archive.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using dynamix::BatchPlan;
using dynamix::ClusterState;
using dynamix::PpoConfig;
using dynamix::fuzz::fail;
using dynamix::testing::small_policy_config;

// One stored tensor of the archive from [entry][dtype][length][value bytes...].
std::map<std::string, torch::Tensor> replaced(const std::string& rest) {
  static const char* const keys[] = {"norm.node.mean",   "norm.node.var",   "norm.node.count",
                                     "norm.global.mean", "norm.global.var", "norm.global.count",
                                     "updates"};
  static const torch::ScalarType types[] = {torch::kDouble, torch::kFloat, torch::kLong, torch::kInt,
                                            torch::kUInt8,  torch::kHalf,  torch::kBool};
  if (rest.size() < 3) return {};
  const std::string key = keys[static_cast<uint8_t>(rest[0]) % std::size(keys)];
  const torch::ScalarType type = types[static_cast<uint8_t>(rest[1]) % std::size(types)];
  const int64_t length = static_cast<uint8_t>(rest[2]) % (dynamix::kNodeFeatures + 4);
  torch::Tensor t = torch::zeros({length}, torch::TensorOptions().dtype(type));
  const size_t bytes = std::min(rest.size() - 3, static_cast<size_t>(t.nbytes()));
  if (bytes > 0) std::memcpy(t.data_ptr(), rest.data() + 3, bytes);
  if (type == torch::kBool) t = t.to(torch::kUInt8).remainder(2).to(torch::kBool);  // only 0 and 1 are bools
  return {{key, t}};
}

// Four ranks, the last two slower, at window `w` of a run with a fixed B of 128.
ClusterState cluster(int64_t w) {
  ClusterState s;
  s.window = w;
  s.bounds.min = 4;
  s.bounds.max = {256, 256, 256, 256};
  s.bounds.global_batch = 128;
  s.global.global_batch = 128;
  s.global.step = 20 * (w + 1);
  s.global.progress = 0.1 * static_cast<double>(w);
  const double per_sample[] = {1e-3, 1e-3, 1.5e-3, 2.5e-3};
  for (int i = 0; i < 4; ++i) {
    dynamix::NodeRecord& r = s.nodes.emplace_back();
    r.rank = i;
    r.batch_size = 32;
    r.batch_max = 256;
    r.steps = 20;
    r.compute_s = r.compute_recent_s = 32 * per_sample[i];
    r.compute_rel_se = 0.02;
    r.comm_s = 0.002;
    r.samples_per_s = r.batch_size / r.compute_s;
  }
  return s;
}

void check_plan(const BatchPlan& p, const ClusterState& s) {
  if (p.batch_sizes.size() != s.nodes.size()) fail("a loaded policy's plan has the wrong number of ranks");
  int64_t sum = 0;
  for (int32_t b : p.batch_sizes) {
    if (b < s.bounds.min || b > 256) fail("a loaded policy's plan leaves the bounds: " + std::to_string(b));
    sum += b;
  }
  if (sum != s.bounds.global_batch) fail("a loaded policy's plan sums to " + std::to_string(sum));
}

void load_and_decide(const std::string& bytes) {
  dynamix::DynamixOptions o;
  o.ppo = small_policy_config();
  o.learn = false;
  dynamix::DynamixPolicy policy(o);
  try {
    policy.load_archive(bytes, "fuzz input");
  } catch (const dynamix::Error&) {
    return;
  }
  for (int64_t w = 0; w < 3; ++w) {
    const ClusterState s = cluster(w);
    check_plan(policy.decide(s), s);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const PpoConfig config = small_policy_config();
  switch (data[0] % 3) {
    case 0:
      load_and_decide(rest);
      break;
    case 1: {
      const std::string text = dynamix::to_string(config) + rest;
      PpoConfig net = config;
      try {
        net = dynamix::ppo_config_from_string(text);
      } catch (const dynamix::Error&) {
      }
      load_and_decide(dynamix::testing::policy_archive({}, net, text));
      break;
    }
    default:
      load_and_decide(dynamix::testing::policy_archive(replaced(rest), config, dynamix::to_string(config)));
  }
  return 0;
}
