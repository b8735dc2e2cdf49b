// DYNAMIX — PpoConfig text form (printed at start, stored inside saved policies) and validation.
#include "agent/ppo/ppo_config.h"

#include <cmath>
#include <functional>
#include <iomanip>
#include <limits>
#include <map>
#include <sstream>
#include <type_traits>

#include "agent/ppo/feature_groups.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

// Shortest of 15..17 significant digits that reads back exactly.
std::string fmt(double v) {
  std::string text;
  for (int digits = 15; digits <= 17; ++digits) {
    std::ostringstream os;
    os << std::setprecision(digits) << v;
    text = os.str();
    if (std::stod(text) == v) break;
  }
  return text;
}

template <class T>
std::string join(const std::vector<T>& values) {
  std::ostringstream os;
  for (size_t i = 0; i < values.size(); ++i) os << (i ? "," : "") << fmt(static_cast<double>(values[i]));
  return os.str();
}

std::string join_words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ",") + w;
  return out;
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

double parse_double(const std::string& key, const std::string& value) {
  try {
    size_t used = 0;
    double v = std::stod(value, &used);
    if (used == value.size()) return v;
  } catch (const std::exception&) {
  }
  throw Error("ppo config: key '" + key + "' expects a number, got '" + value + "'");
}

// A whole number that T holds (bool: 0 or 1). A cast of anything else (2.5, 1e300, nan) would
// truncate silently or be undefined.
template <class T>
T parse_whole(const std::string& key, const std::string& value) {
  const double v = parse_double(key, value);
  const double lo = std::is_same_v<T, bool> ? 0 : static_cast<double>(std::numeric_limits<T>::min());
  const double hi = std::is_same_v<T, bool> ? 1 : static_cast<double>(std::numeric_limits<T>::max());
  DYNAMIX_CHECK(std::trunc(v) == v && v >= lo && v < hi + 1, "ppo config: key '" + key +
                                                                 "' expects a whole number in [" + fmt(lo) +
                                                                 ", " + fmt(hi) + "], got '" + value + "'");
  return static_cast<T>(v);
}

template <class T>
std::vector<T> parse_list(const std::string& key, const std::string& value) {
  std::vector<T> out;
  std::stringstream ss(value);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parse_whole<T>(key, item));
  return out;
}

// One entry per field: how to print it and how to set it from text.
struct Field {
  std::function<std::string(const PpoConfig&)> get;
  std::function<void(PpoConfig&, const std::string&, const std::string&)> set;
};

template <class T>
Field scalar(T PpoConfig::*member) {
  return {[member](const PpoConfig& c) { return fmt(static_cast<double>(c.*member)); },
          [member](PpoConfig& c, const std::string& k, const std::string& v) {
            if constexpr (std::is_floating_point_v<T>)
              c.*member = parse_double(k, v);
            else
              c.*member = parse_whole<T>(k, v);
          }};
}

template <class T>
Field reward_scalar(T RewardWeights::*member) {
  return {[member](const PpoConfig& c) { return fmt(c.reward.*member); },
          [member](PpoConfig& c, const std::string& k, const std::string& v) {
            c.reward.*member = parse_double(k, v);
          }};
}

const std::map<std::string, Field>& fields() {
  static const std::map<std::string, Field> table = {
      {"gamma", scalar(&PpoConfig::gamma)},
      {"gae_lambda", scalar(&PpoConfig::gae_lambda)},
      {"clip_coef", scalar(&PpoConfig::clip_coef)},
      {"clip_vloss", scalar(&PpoConfig::clip_vloss)},
      {"learning_rate", scalar(&PpoConfig::learning_rate)},
      {"adam_eps", scalar(&PpoConfig::adam_eps)},
      {"update_epochs", scalar(&PpoConfig::update_epochs)},
      {"num_minibatches", scalar(&PpoConfig::num_minibatches)},
      {"vf_coef", scalar(&PpoConfig::vf_coef)},
      {"ent_coef", scalar(&PpoConfig::ent_coef)},
      {"max_grad_norm", scalar(&PpoConfig::max_grad_norm)},
      {"target_kl", scalar(&PpoConfig::target_kl)},
      {"norm_adv", scalar(&PpoConfig::norm_adv)},
      {"rollout_windows", scalar(&PpoConfig::rollout_windows)},
      {"background_update", scalar(&PpoConfig::background_update)},
      {"hidden",
       {[](const PpoConfig& c) { return join(c.hidden); },
        [](PpoConfig& c, const std::string& k, const std::string& v) {
          c.hidden = parse_list<int64_t>(k, v);
        }}},
      {"prior_logit", scalar(&PpoConfig::prior_logit)},
      {"prior_action", scalar(&PpoConfig::prior_action)},
      {"prior_kl_coef", scalar(&PpoConfig::prior_kl_coef)},
      {"obs_clip", scalar(&PpoConfig::obs_clip)},
      {"ablate",
       {[](const PpoConfig& c) { return join_words(c.ablate); },
        [](PpoConfig& c, const std::string&, const std::string& v) { c.ablate = split_words(v); }}},
      {"reward.efficiency", reward_scalar(&RewardWeights::efficiency)},
      {"reward.instability", reward_scalar(&RewardWeights::instability)},
      {"reward.churn", reward_scalar(&RewardWeights::churn)},
      {"reward.generalization", reward_scalar(&RewardWeights::generalization)},
      {"reward.spike_threshold", reward_scalar(&RewardWeights::spike_threshold)},
      {"reward.oom", reward_scalar(&RewardWeights::oom)},
      {"seed",
       {[](const PpoConfig& c) { return std::to_string(c.seed); },
        [](PpoConfig& c, const std::string& k, const std::string& v) {
          DYNAMIX_CHECK(!v.empty() && v.size() <= 20 &&
                            v.find_first_not_of("0123456789") == std::string::npos &&
                            (v.size() < 20 || v <= "18446744073709551615"),
                        "ppo config: key '" + k + "' expects an unsigned 64-bit integer, got '" + v + "'");
          c.seed = std::stoull(v);
        }}},
  };
  return table;
}

}  // namespace

std::string to_string(const PpoConfig& config) {
  std::ostringstream os;
  // An empty value (ablate, when nothing is ablated) is left out: files read the same as before.
  for (const auto& [key, field] : fields()) {
    const std::string value = field.get(config);
    if (!value.empty()) os << key << "=" << value << "\n";
  }
  return os.str();
}

PpoConfig ppo_config_from_string(const std::string& text) {
  PpoConfig config;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) {
    if (line.empty()) continue;
    auto eq = line.find('=');
    DYNAMIX_CHECK(eq != std::string::npos, "ppo config: line '" + line + "' is not key=value");
    std::string key = line.substr(0, eq);
    auto it = fields().find(key);
    DYNAMIX_CHECK(it != fields().end(), "ppo config: unknown key '" + key + "'");
    it->second.set(config, key, line.substr(eq + 1));
  }
  validate(config);
  return config;
}

void validate(const PpoConfig& c) {
  auto check = [](bool ok, const std::string& key, const std::string& expected) {
    DYNAMIX_CHECK(ok, "ppo config: '" + key + "' must be " + expected);
  };
  check(c.gamma >= 0 && c.gamma <= 1, "gamma", "in [0, 1]");
  check(c.gae_lambda >= 0 && c.gae_lambda <= 1, "gae_lambda", "in [0, 1]");
  check(c.clip_coef > 0, "clip_coef", "> 0");
  check(c.learning_rate > 0, "learning_rate", "> 0");
  check(c.adam_eps > 0, "adam_eps", "> 0");
  check(c.update_epochs >= 1, "update_epochs", ">= 1");
  check(c.num_minibatches >= 1, "num_minibatches", ">= 1");
  check(c.rollout_windows >= c.num_minibatches, "rollout_windows", ">= num_minibatches");
  check(c.vf_coef >= 0 && c.ent_coef >= 0, "vf_coef/ent_coef", ">= 0");
  check(c.max_grad_norm > 0, "max_grad_norm", "> 0");
  // A policy file's network is allocated from its config before it is read: bounded, so a corrupt
  // file cannot ask for terabytes.
  check(!c.hidden.empty() && c.hidden.size() <= kMaxHiddenLayers, "hidden",
        "a list of 1 to " + std::to_string(kMaxHiddenLayers) + " layer widths");
  for (int64_t h : c.hidden)
    check(h >= 1 && h <= kMaxHiddenWidth, "hidden", "widths in [1, " + std::to_string(kMaxHiddenWidth) + "]");
  check(std::isfinite(c.prior_logit), "prior_logit", "finite");
  check(c.prior_action >= 0 && c.prior_action < 5, "prior_action", "a move index in [0, 5)");
  check(c.prior_kl_coef >= 0, "prior_kl_coef", ">= 0");
  check(c.obs_clip > 0 && std::isfinite(c.obs_clip), "obs_clip", "finite and > 0");
  check(!std::isnan(c.target_kl), "target_kl", "a number");
  const RewardWeights& w = c.reward;
  for (double v : {w.efficiency, w.instability, w.churn, w.generalization, w.spike_threshold, w.oom})
    check(std::isfinite(v), "reward.*", "finite");
  check_feature_groups(c.ablate);
}

}  // namespace dynamix
