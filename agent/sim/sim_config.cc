// DYNAMIX — parsing and validation of the `sim:` block; presets; random and fitted profiles.
#include "agent/sim/sim_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "agent/sim/profile_fit.h"
#include "agent/sim/sim_rng.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

constexpr int64_t kMaxNodes = int64_t{1} << 20;

// Every message names the key; the origin (a file) comes first when known.
class Parser {
 public:
  explicit Parser(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& msg) const {
    throw Error((origin_.empty() ? "" : origin_ + ": ") + key + ": " + msg);
  }

  std::string shown(const YAML::Node& n) const {
    if (n.IsScalar()) return "'" + n.Scalar() + "'";
    return n.IsSequence() ? "a list" : n.IsMap() ? "a mapping" : "nothing";
  }

  double number(const YAML::Node& n, const std::string& key) const {
    if (n.IsScalar()) {
      try {
        const double v = n.as<double>();
        if (std::isfinite(v)) return v;
      } catch (const YAML::Exception&) {
      }
    }
    fail(key, "expected a finite number, got " + shown(n));
  }

  int64_t integer(const YAML::Node& n, const std::string& key) const {
    if (n.IsScalar()) {
      try {
        return n.as<int64_t>();
      } catch (const YAML::Exception&) {
      }
    }
    fail(key, "expected an integer, got " + shown(n));
  }

  double number_at_least(const YAML::Node& n, const std::string& key, double lo, bool strict) const {
    const double v = number(n, key);
    if (strict ? !(v > lo) : !(v >= lo)) {
      fail(key, std::string("expected a number ") + (strict ? "> " : ">= ") + std::to_string(lo) + ", got " +
                    shown(n));
    }
    return v;
  }

  void only_keys(const YAML::Node& map, const std::string& key,
                 const std::vector<std::string>& allowed) const {
    if (!map.IsMap()) fail(key, "expected a mapping, got " + shown(map));
    for (const auto& kv : map) {
      const std::string k = kv.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        fail(key + "." + k, "unknown key (expected one of: " + list + ")");
      }
    }
  }

 private:
  std::string origin_;
};

void parse_workload(const Parser& p, const YAML::Node& n, SimWorkload& w) {
  p.only_keys(n, "sim.workload",
              {"alpha_s", "beta_s", "grad_bytes", "bandwidth_gbps", "latency_us", "b_noise", "b_noise_growth",
               "target_progress", "noise", "grad_noise"});
  auto get = [&](const char* k, double& v, double lo, bool strict) {
    if (n[k]) v = p.number_at_least(n[k], std::string("sim.workload.") + k, lo, strict);
  };
  get("alpha_s", w.alpha_s, 0, false);
  get("beta_s", w.beta_s, 0, true);
  get("grad_bytes", w.grad_bytes, 0, false);
  get("bandwidth_gbps", w.bandwidth_gbps, 0, true);
  get("latency_us", w.latency_us, 0, false);
  get("b_noise", w.b_noise, 0, false);
  get("b_noise_growth", w.b_noise_growth, 0, true);
  get("target_progress", w.target_progress, 0, true);
  get("noise", w.noise, 0, false);
  get("grad_noise", w.grad_noise, 0, false);
}

void set_speeds(SimConfig& c, const std::vector<double>& speeds) {
  c.nodes = int32_t(speeds.size());
  c.alpha_s.resize(speeds.size());
  c.beta_s.resize(speeds.size());
  for (size_t i = 0; i < speeds.size(); ++i) {
    c.alpha_s[i] = c.workload.alpha_s / speeds[i];
    c.beta_s[i] = c.workload.beta_s / speeds[i];
  }
}

// The fitted run's compute noise and communication, where the workload block does not set them:
// its gradient bytes, no latency, and the bandwidth at which a ring allreduce over the run's ranks
// takes the exposed communication time the run measured.
void apply_fitted_workload(const FittedProfile& f, const YAML::Node& given, SimWorkload& w) {
  const auto set = [&](const char* k) { return given && given.IsMap() && given[k]; };
  if (!set("noise")) w.noise = f.noise;
  if (set("grad_bytes") || set("bandwidth_gbps") || set("latency_us") || f.ranks.size() < 2) return;
  if (f.grad_bytes > 0) w.grad_bytes = f.grad_bytes;
  const double n = double(f.ranks.size()), ring_bytes = 2 * (n - 1) / n * w.grad_bytes;
  w.latency_us = 0;
  w.bandwidth_gbps = ring_bytes * 8 / std::max(f.exposed_comm_s, 1e-6) / 1e9;
}

void parse_profile(const Parser& p, const YAML::Node& n, const YAML::Node& workload, bool nodes_given,
                   SimConfig& c) {
  const int32_t given = nodes_given ? c.nodes : 0;
  auto check_size = [&](int64_t size, const std::string& key) {
    if (nodes_given && size != c.nodes) {
      p.fail(key, "describes " + std::to_string(size) + " nodes but sim.nodes is " + std::to_string(c.nodes));
    }
  };
  if (n.IsScalar()) {
    try {
      set_speeds(c, preset_speeds(n.Scalar(), given));
    } catch (const Error& e) {
      p.fail("sim.profile", e.what());
    }
    c.profile = n.Scalar();
    return;
  }
  p.only_keys(n, "sim.profile", {"preset", "classes", "random", "fit"});
  if (n.size() != 1) p.fail("sim.profile", "expected exactly one of preset, classes, random, fit");
  if (n["preset"]) {
    const std::string name = n["preset"].IsScalar() ? n["preset"].Scalar() : "";
    try {
      set_speeds(c, preset_speeds(name, given));
    } catch (const Error& e) {
      p.fail("sim.profile.preset", e.what());
    }
    c.profile = name;
  } else if (n["classes"]) {
    const YAML::Node& cl = n["classes"];
    if (!cl.IsSequence() || cl.size() == 0) p.fail("sim.profile.classes", "expected a non-empty list");
    std::vector<double> speeds;
    for (size_t k = 0; k < cl.size(); ++k) {
      const std::string key = "sim.profile.classes[" + std::to_string(k) + "]";
      p.only_keys(cl[k], key, {"count", "speed"});
      if (!cl[k]["count"] || !cl[k]["speed"]) p.fail(key, "needs count and speed");
      const int64_t count = p.integer(cl[k]["count"], key + ".count");
      if (count < 1 || count > kMaxNodes) p.fail(key + ".count", "expected 1.." + std::to_string(kMaxNodes));
      const double speed = p.number_at_least(cl[k]["speed"], key + ".speed", 0, true);
      speeds.insert(speeds.end(), size_t(count), speed);
      if (int64_t(speeds.size()) > kMaxNodes)
        p.fail("sim.profile.classes", "more than " + std::to_string(kMaxNodes) + " nodes");
    }
    check_size(int64_t(speeds.size()), "sim.profile.classes");
    set_speeds(c, speeds);
    c.profile = "classes";
  } else if (n["random"]) {
    const YAML::Node& r = n["random"];
    p.only_keys(r, "sim.profile.random", {"min_speed", "max_speed"});
    if (!r["min_speed"] || !r["max_speed"]) p.fail("sim.profile.random", "needs min_speed and max_speed");
    const double lo = p.number_at_least(r["min_speed"], "sim.profile.random.min_speed", 0, true);
    const double hi = p.number_at_least(r["max_speed"], "sim.profile.random.max_speed", lo, false);
    SimRng rng(c.seed ^ 0x5EED5EEDull);  // own stream: the profile does not shift the run's noise
    std::vector<double> speeds(size_t(c.nodes));
    for (auto& s : speeds) s = lo + (hi - lo) * rng.uniform();
    set_speeds(c, speeds);
    c.profile = "random";
  } else {
    if (!n["fit"].IsScalar()) p.fail("sim.profile.fit", "expected a path to metrics.jsonl");
    const std::string path = n["fit"].Scalar();
    const FittedProfile fitted = fit_profile_from_metrics(path);
    const auto& ranks = fitted.ranks;
    // A run with fewer ranks than sim.nodes is tiled cyclically (fit on 4, simulate 1024).
    const size_t count = nodes_given ? size_t(c.nodes) : ranks.size();
    c.nodes = int32_t(count);
    c.alpha_s.resize(count);
    c.beta_s.resize(count);
    for (size_t i = 0; i < count; ++i) {
      c.alpha_s[i] = ranks[i % ranks.size()].alpha_s;
      c.beta_s[i] = ranks[i % ranks.size()].beta_s;
    }
    apply_fitted_workload(fitted, workload, c.workload);
    c.profile = "fit:" + path;
  }
}

void parse_events(const Parser& p, const YAML::Node& n, SimConfig& c) {
  if (!n.IsSequence()) p.fail("sim.events", "expected a list, got " + p.shown(n));
  for (size_t k = 0; k < n.size(); ++k) {
    const std::string key = "sim.events[" + std::to_string(k) + "]";
    const YAML::Node& e = n[k];
    p.only_keys(e, key, {"at_step", "ranks", "rank", "slowdown", "duration_steps"});
    SimEvent ev;
    if (!e["at_step"] || !e["slowdown"]) p.fail(key, "needs at_step and slowdown");
    ev.at_step = p.integer(e["at_step"], key + ".at_step");
    if (ev.at_step < 0) p.fail(key + ".at_step", "expected >= 0");
    ev.slowdown = p.number_at_least(e["slowdown"], key + ".slowdown", 0, true);
    if (e["duration_steps"]) {
      ev.duration_steps = p.integer(e["duration_steps"], key + ".duration_steps");
      if (ev.duration_steps < 0) p.fail(key + ".duration_steps", "expected >= 0 (0 = permanent)");
    }
    if (e["ranks"] && e["rank"]) p.fail(key, "give ranks or rank, not both");
    if (e["rank"]) {
      ev.ranks.push_back(int32_t(p.integer(e["rank"], key + ".rank")));
    } else if (e["ranks"]) {
      if (!e["ranks"].IsSequence()) p.fail(key + ".ranks", "expected a list of ranks");
      for (size_t j = 0; j < e["ranks"].size(); ++j) {
        ev.ranks.push_back(int32_t(p.integer(e["ranks"][j], key + ".ranks[" + std::to_string(j) + "]")));
      }
    } else {
      p.fail(key, "needs ranks (or rank)");
    }
    for (int32_t r : ev.ranks) {
      if (r < 0 || r >= c.nodes) {
        p.fail(key + ".ranks", "rank " + std::to_string(r) + " outside 0.." + std::to_string(c.nodes - 1));
      }
    }
    c.events.push_back(std::move(ev));
  }
  std::stable_sort(c.events.begin(), c.events.end(),
                   [](const SimEvent& a, const SimEvent& b) { return a.at_step < b.at_step; });
}

}  // namespace

std::vector<std::string> sim_preset_names() {
  return {"uniform (any size, all speed 1)",
          "hetero4 (4 nodes: 1, 1, 0.5, 0.25)",
          "mixed (any size: half at 1, a quarter at 0.5, a quarter at 0.25)",
          "mixed32, mixed256, mixed1024 (mixed at that size)",
          "tiers (any size: four equal tiers at 1, 0.75, 0.5, 0.25)",
          "straggler (any size: the last node at 0.25, the others at 1)"};
}

std::vector<double> preset_speeds(const std::string& preset, int32_t nodes) {
  auto fixed = [&](int32_t size) {
    if (nodes != 0 && nodes != size) {
      throw Error("preset '" + preset + "' has " + std::to_string(size) + " nodes, not " +
                  std::to_string(nodes));
    }
    return size;
  };
  auto any = [&](int32_t def) {
    if (nodes < 0 || nodes > kMaxNodes)
      throw Error("node count " + std::to_string(nodes) + " outside 1..2^20");
    return nodes > 0 ? nodes : def;
  };
  auto mixed = [](int32_t n) {
    std::vector<double> s(static_cast<size_t>(n), 1.0);
    const int32_t quarter = n / 4;
    for (int32_t i = n - 2 * quarter; i < n - quarter; ++i) s[size_t(i)] = 0.5;
    for (int32_t i = n - quarter; i < n; ++i) s[size_t(i)] = 0.25;
    return s;
  };
  if (preset == "uniform") return std::vector<double>(size_t(any(4)), 1.0);
  if (preset == "hetero4") {
    fixed(4);
    return {1, 1, 0.5, 0.25};
  }
  if (preset == "mixed") return mixed(any(32));
  if (preset == "mixed32") return mixed(fixed(32));
  if (preset == "mixed256") return mixed(fixed(256));
  if (preset == "mixed1024") return mixed(fixed(1024));
  if (preset == "tiers") {
    const int32_t n = any(32);
    std::vector<double> s(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) s[size_t(i)] = 1.0 - 0.25 * double((int64_t(i) * 4) / n);
    return s;
  }
  if (preset == "straggler") {
    const int32_t n = any(8);
    std::vector<double> s(static_cast<size_t>(n), 1.0);
    s.back() = 0.25;
    return s;
  }
  throw Error("unknown preset '" + preset +
              "' (expected uniform, hetero4, mixed, mixed32, mixed256, mixed1024, tiers, straggler)");
}

SimConfig preset_sim_config(const std::string& preset, int32_t nodes) {
  SimConfig c;
  set_speeds(c, preset_speeds(preset, nodes));
  c.profile = preset;
  return c;
}

SimConfig parse_sim_config(const std::string& yaml_text, const std::string& origin) {
  const Parser p(origin);
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    p.fail("sim", std::string("invalid YAML: ") + e.what());
  }
  if (root.IsMap() && root.size() == 1 && root["sim"]) root = root["sim"];
  SimConfig c;
  if (root.IsNull()) {
    set_speeds(c, preset_speeds("uniform", c.nodes));
    return c;
  }
  p.only_keys(root, "sim", {"nodes", "seed", "profile", "events", "workload", "max_steps"});
  const bool nodes_given = bool(root["nodes"]);
  if (nodes_given) {
    const int64_t n = p.integer(root["nodes"], "sim.nodes");
    if (n < 1 || n > kMaxNodes)
      p.fail("sim.nodes", "expected 1.." + std::to_string(kMaxNodes) + ", got " + std::to_string(n));
    c.nodes = int32_t(n);
  }
  if (root["seed"]) {
    const int64_t s = p.integer(root["seed"], "sim.seed");
    if (s < 0) p.fail("sim.seed", "expected >= 0");
    c.seed = uint64_t(s);
  }
  if (root["max_steps"]) {
    c.max_steps = p.integer(root["max_steps"], "sim.max_steps");
    if (c.max_steps < 0) p.fail("sim.max_steps", "expected >= 0 (0 = no limit)");
  }
  if (root["workload"]) parse_workload(p, root["workload"], c.workload);
  if (root["profile"]) {
    parse_profile(p, root["profile"], root["workload"], nodes_given, c);
  } else {
    set_speeds(c, preset_speeds("uniform", c.nodes));
  }
  if (root["events"]) parse_events(p, root["events"], c);
  return c;
}

}  // namespace dynamix
