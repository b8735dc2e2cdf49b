// DYNAMIX — DynamixPolicy persistence: one torch archive for policy files and checkpoint blobs.
#include <cmath>
#include <fstream>
#include <sstream>

#include "agent/ppo/actor_critic.h"
#include "agent/ppo/dynamix_policy.h"
#include "agent/ppo/ppo_learner.h"
#include "framework/core/archive_check.h"
#include "framework/core/error.h"
#include "framework/core/file_io.h"
#include "framework/core/optimizer_state.h"
#include "framework/core/tensor_checks.h"

namespace dynamix {
namespace {

// Version 2: scale-free residual policy (features: state_encoder.h, actions: moves.h). Version 1
// files (multiplier actions) are refused with a clear message: their network reads other inputs.
constexpr const char* kFormat = "dynamix-ppo/2";

// The `n` values of a stored 1-D tensor. Its size is checked before anything is copied: a
// broadcast view of one stored value can claim gigabytes (framework/core/tensor_checks.h).
std::vector<double> to_vector(const torch::Tensor& t, const std::string& key, int64_t n) {
  DYNAMIX_CHECK(t.dim() == 1 && t.numel() == n && !is_broadcast_view(t),
                "'" + key + "' is " + tensor_layout(t) + ", expected " + std::to_string(n) + " values");
  auto c = t.to(torch::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// The `n` values stored under `key`.
std::vector<double> read_values(torch::serialize::InputArchive& a, const std::string& key, int64_t n) {
  torch::Tensor t;
  a.read(key, t);
  return to_vector(t, key, n);
}

// A normaliser's statistics (PREFIX.mean, .var, .count): finite, variances >= 0, count > 0.
RunningNorm read_norm(torch::serialize::InputArchive& a, const std::string& prefix, int64_t n) {
  std::vector<double> mean = read_values(a, prefix + ".mean", n), var = read_values(a, prefix + ".var", n);
  const double count = read_values(a, prefix + ".count", 1).at(0);
  for (int64_t j = 0; j < n; ++j) {
    DYNAMIX_CHECK(std::isfinite(mean[j]) && std::isfinite(var[j]) && var[j] >= 0,
                  "'" + prefix + "' feature " + std::to_string(j) + " has mean " + std::to_string(mean[j]) +
                      " and variance " + std::to_string(var[j]));
  }
  DYNAMIX_CHECK(std::isfinite(count) && count > 0, "'" + prefix + ".count' is " + std::to_string(count));
  RunningNorm norm(n);
  norm.set(std::move(mean), std::move(var), count);
  return norm;
}

// Module::load swaps in each stored tensor whatever its shape, so a network of another layout
// loaded silently and failed at its first decision: compare with the layout it had before.
void load_network(torch::serialize::InputArchive& a, torch::nn::Module& net) {
  std::vector<std::pair<std::string, torch::Tensor>> before;  // load() reshapes the tensors in place
  for (const auto& p : net.named_parameters()) before.emplace_back(p.key(), torch::empty_like(p.value()));
  for (const auto& b : net.named_buffers()) before.emplace_back(b.key(), torch::empty_like(b.value()));
  net.load(a);
  const auto params = net.named_parameters();
  const auto buffers = net.named_buffers();
  for (const auto& [key, want] : before) {
    const torch::Tensor* got = params.find(key);
    if (got == nullptr) got = buffers.find(key);
    DYNAMIX_CHECK(got != nullptr && got->sizes() == want.sizes() && got->dtype() == want.dtype() &&
                      !is_broadcast_view(*got),
                  "'net." + key + "' is " + (got ? tensor_layout(*got) : "missing") + " in the file, " +
                      tensor_layout(want) + " in the network its config describes");
  }
}

// Adam's moments, written per parameter in order. LibTorch's own Optimizer::save keys its state by
// parameter addresses, so the same training run would write different bytes; this keeps policy
// files reproducible bit for bit.
void write_adam(torch::serialize::OutputArchive& a, torch::optim::Adam& opt) {
  const auto& params = opt.param_groups().at(0).params();
  for (size_t k = 0; k < params.size(); ++k) {
    auto it = opt.state().find(optimizer_state_key(opt, params[k]));
    if (it == opt.state().end()) continue;
    auto& st = static_cast<torch::optim::AdamParamState&>(*it->second);
    const std::string prefix = "adam." + std::to_string(k) + ".";
    a.write(prefix + "step", torch::tensor({static_cast<int64_t>(st.step())}, torch::kLong));
    a.write(prefix + "exp_avg", st.exp_avg());
    a.write(prefix + "exp_avg_sq", st.exp_avg_sq());
  }
}

void read_adam(torch::serialize::InputArchive& a, torch::optim::Adam& opt) {
  const auto& params = opt.param_groups().at(0).params();
  for (size_t k = 0; k < params.size(); ++k) {
    const std::string prefix = "adam." + std::to_string(k) + ".";
    torch::Tensor step, m, v;
    if (!a.try_read(prefix + "step", step)) continue;
    a.read(prefix + "exp_avg", m);
    a.read(prefix + "exp_avg_sq", v);
    DYNAMIX_CHECK(m.sizes() == params[k].sizes() && v.sizes() == params[k].sizes() && !is_broadcast_view(m) &&
                      !is_broadcast_view(v),
                  "optimizer state does not match the network");
    auto st = std::make_unique<torch::optim::AdamParamState>();
    st->step(step.item<int64_t>());
    st->exp_avg(m);
    st->exp_avg_sq(v);
    opt.state()[optimizer_state_key(opt, params[k])] = std::move(st);
  }
}

}  // namespace

void DynamixPolicy::write_archive(std::ostream& out) const {
  std::lock_guard<std::mutex> lk(learner_mutex_);
  torch::serialize::OutputArchive a;
  a.write("format", c10::IValue(std::string(kFormat)));
  a.write("config", c10::IValue(to_string(config_)));
  torch::serialize::OutputArchive net;
  learner_->net()->save(net);
  a.write("net", net);
  write_adam(a, learner_->optimizer());
  a.write("norm.node.mean", torch::tensor(node_norm_.mean(), torch::kDouble));
  a.write("norm.node.var", torch::tensor(node_norm_.var(), torch::kDouble));
  a.write("norm.node.count", torch::tensor({node_norm_.count()}, torch::kDouble));
  a.write("norm.global.mean", torch::tensor(global_norm_.mean(), torch::kDouble));
  a.write("norm.global.var", torch::tensor(global_norm_.var(), torch::kDouble));
  a.write("norm.global.count", torch::tensor({global_norm_.count()}, torch::kDouble));
  {
    std::lock_guard<std::mutex> q(queue_mutex_);
    a.write("updates", torch::tensor({updates_}, torch::kLong));
  }
  std::ostringstream rng;
  rng << rng_ << ' ' << learner_->rng();
  a.write("rng", c10::IValue(rng.str()));
  a.save_to(out);
}

void DynamixPolicy::read_archive(std::istream& in) {
  torch::serialize::InputArchive a;
  a.load_from(in);
  c10::IValue v;
  DYNAMIX_CHECK(a.try_read("format", v) && v.isString(),
                std::string("not a dynamix policy (expected format ") + kFormat + ")");
  DYNAMIX_CHECK(v.toStringRef() == kFormat, "policy format " + v.toStringRef() +
                                                " is not supported (expected " + kFormat +
                                                "; retrain it with `dynamix agent pretrain`)");
  a.read("config", v);
  PpoConfig loaded = ppo_config_from_string(v.toStringRef());
  loaded.background_update = config_.background_update;  // a property of this run, not of the policy
  auto learner = std::make_unique<PpoLearner>(loaded, kNodeFeatures, kGlobalFeatures);
  torch::serialize::InputArchive net;
  a.read("net", net);
  load_network(net, *learner->net());
  read_adam(a, learner->optimizer());
  RunningNorm node_norm = read_norm(a, "norm.node", kNodeFeatures);
  RunningNorm global_norm = read_norm(a, "norm.global", kGlobalFeatures);
  const double updates = read_values(a, "updates", 1).at(0);
  DYNAMIX_CHECK(updates >= 0 && updates <= 9007199254740992.0 && std::trunc(updates) == updates,
                "'updates' is " + std::to_string(updates) + ", expected a count");
  a.read("rng", v);
  DYNAMIX_CHECK(v.isString(), "'rng' is not text");
  std::istringstream rng(v.toStringRef());
  std::mt19937_64 policy_rng;
  rng >> policy_rng >> learner->rng();
  DYNAMIX_CHECK(!rng.fail(), "'rng' does not hold two generator states");

  std::lock_guard<std::mutex> lk(learner_mutex_);
  config_ = loaded;
  learner_ = std::move(learner);
  rng_ = policy_rng;
  node_norm_ = node_norm;
  global_norm_ = global_norm;
  reward_ = RewardTracker(config_.reward);
  models_.reset();
  pending_.reset();
  rollout_ = std::make_unique<Rollout>();
  prev_batches_.clear();
  {
    std::lock_guard<std::mutex> q(queue_mutex_);
    updates_ = static_cast<int64_t>(updates);
  }
  publish_snapshot();
}

std::string DynamixPolicy::save_state() const {
  std::ostringstream out;
  write_archive(out);
  return out.str();
}

void DynamixPolicy::load_state(const std::string& blob) {
  if (!blob.empty()) load_archive(blob, "policy state from checkpoint");
}

void DynamixPolicy::save(const std::string& path) const { write_file_atomically(path, save_state()); }

void DynamixPolicy::load_archive(const std::string& bytes, const std::string& source) {
  check_zip_archive(bytes, "cannot read " + source);  // before LibTorch parses anything (archive_check.h)
  std::istringstream in(bytes);
  try {
    read_archive(in);
  } catch (const c10::Error& e) {
    throw Error("cannot read " + source + ": " + e.what_without_backtrace());
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  } catch (const std::exception& e) {  // LibTorch's TorchScript reader throws std::runtime_error too
    throw Error("cannot read " + source + ": " + e.what());
  }
}

void DynamixPolicy::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DYNAMIX_CHECK(in, "cannot open policy file " + path + " (policy.checkpoint)");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  load_archive(bytes.str(), "policy file " + path);
}

}  // namespace dynamix
