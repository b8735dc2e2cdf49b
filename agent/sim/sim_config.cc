// DYNAMIX — parsing and validation of the `sim:` block; presets; random and fitted profiles.
#include "agent/sim/sim_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "agent/sim/profile_fit.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/core/stats.h"
#include "framework/core/strings.h"
#include "framework/core/yaml_reader.h"

namespace dynamix {
namespace {

constexpr int64_t kMaxNodes = int64_t{1} << 20;

using Node = YAML::Node;
using Path = std::string;

// A setter that keeps the key's node, to read once the keys it depends on are known.
YamlReader::Setter keep(std::optional<Node>& out) {
  return [&out](const Node& v, const Path&) { out = v; };
}

// Reads a number that must be >= lo (> lo when strict).
double number_at_least(const YamlReader& r, const Node& v, const Path& p, double lo, bool strict) {
  const double x = r.number(v, p);
  r.require(strict ? x > lo : x >= lo, v, p,
            std::string("must be ") + (strict ? "> " : ">= ") + format_number("%g", lo));
  return x;
}

std::vector<YamlReader::Field> workload_fields(const YamlReader& r, SimWorkload& w) {
  const auto at_least = [&r](double& out, double lo, bool strict) {
    return [&r, out = &out, lo, strict](const Node& v, const Path& p) {
      *out = number_at_least(r, v, p, lo, strict);
    };
  };
  return {{"alpha_s", at_least(w.alpha_s, 0, false)},
          {"beta_s", at_least(w.beta_s, 0, true)},
          {"grad_bytes", at_least(w.grad_bytes, 0, false)},
          {"bandwidth_gbps", at_least(w.bandwidth_gbps, 0, true)},
          {"latency_us", at_least(w.latency_us, 0, false)},
          {"b_noise", at_least(w.b_noise, 0, false)},
          {"b_noise_growth", at_least(w.b_noise_growth, 0, true)},
          {"target_progress", at_least(w.target_progress, 0, true)},
          {"noise", at_least(w.noise, 0, false)},
          {"grad_noise", at_least(w.grad_noise, 0, false)},
          {"switch_cost", at_least(w.switch_cost, 0, false)}};
}

// Each node's alpha and beta: the workload's divided by its speed, the fixed cost by its own
// `fixed_speeds` where given (a device generation faster per sample than at its per-step overhead).
void set_speeds(SimConfig& c, const std::vector<double>& speeds,
                const std::vector<double>* fixed_speeds = nullptr) {
  c.nodes = int32_t(speeds.size());
  c.alpha_s.resize(speeds.size());
  c.beta_s.resize(speeds.size());
  for (size_t i = 0; i < speeds.size(); ++i) {
    c.alpha_s[i] = c.workload.alpha_s / (fixed_speeds ? (*fixed_speeds)[i] : speeds[i]);
    c.beta_s[i] = c.workload.beta_s / speeds[i];
  }
}

// The fitted run's compute noise and communication, where the workload block does not set them:
// each node its rank's noise (a shared node scatters more; ranks tiled as the node models are),
// its gradient bytes, no latency, and the bandwidth at which a ring allreduce over the run's ranks
// takes the exposed communication time the run measured.
void apply_fitted_workload(const FittedProfile& f, const YAML::Node& given, SimConfig& c) {
  SimWorkload& w = c.workload;
  const auto set = [&](const char* k) { return given && given.IsMap() && given[k]; };
  if (!set("noise")) {
    w.noise = f.noise;
    c.noise.resize(size_t(c.nodes));
    for (size_t i = 0; i < c.noise.size(); ++i) c.noise[i] = f.ranks[i % f.ranks.size()].rel_residual;
  }
  if (set("grad_bytes") || set("bandwidth_gbps") || set("latency_us") || f.ranks.size() < 2) return;
  if (f.grad_bytes > 0) w.grad_bytes = f.grad_bytes;
  const double n = double(f.ranks.size()), ring_bytes = 2 * (n - 1) / n * w.grad_bytes;
  w.latency_us = 0;
  w.bandwidth_gbps = ring_bytes * 8 / std::max(f.exposed_comm_s, 1e-6) / 1e9;
}

// Speeds from a preset; its errors (unknown name, wrong size) name the key.
void set_preset(const YamlReader& r, const Node& v, const Path& p, int32_t given_nodes, SimConfig& c) {
  const std::string name = r.string(v, p);
  try {
    set_speeds(c, preset_speeds(name, given_nodes));
  } catch (const Error& e) {
    r.fail(p, "'" + p + "': " + e.what());
  }
  c.profile = name;
}

// Speeds, fixed-cost speeds and per-node step noise of {count, speed, fixed_speed, noise} classes
// (fixed_speed defaults to speed, noise to the workload's).
struct ClassNodes {
  std::vector<double> speeds, fixed_speeds, noise;
};

ClassNodes class_nodes(const YamlReader& r, const Node& v, const Path& p, double default_noise) {
  r.require(v.IsSequence() && v.size() > 0, v, p, "must be a non-empty list of {count, speed}");
  ClassNodes nodes;
  auto& speeds = nodes.speeds;
  r.list(v, p, [&](const Node& cls, const Path& cp) {
    std::optional<int64_t> count;
    std::optional<double> speed, fixed_speed;
    double noise = default_noise;
    r.section(
        cls, cp,
        {{"count",
          [&](const Node& x, const Path& xp) {
            count = r.integer(x, xp);
            r.require(*count >= 1 && *count <= kMaxNodes, x, xp,
                      "must be in 1.." + std::to_string(kMaxNodes));
          }},
         {"speed", [&](const Node& x, const Path& xp) { speed = number_at_least(r, x, xp, 0, true); }},
         {"fixed_speed",
          [&](const Node& x, const Path& xp) { fixed_speed = number_at_least(r, x, xp, 0, true); }},
         {"noise", [&](const Node& x, const Path& xp) { noise = number_at_least(r, x, xp, 0, false); }}});
    if (!count || !speed) r.fail(cp, "'" + cp + "' needs count and speed");
    speeds.insert(speeds.end(), size_t(*count), *speed);
    nodes.fixed_speeds.insert(nodes.fixed_speeds.end(), size_t(*count), fixed_speed.value_or(*speed));
    nodes.noise.insert(nodes.noise.end(), size_t(*count), noise);
    if (int64_t(speeds.size()) > kMaxNodes)
      r.fail(p, "'" + p + "' has more than " + std::to_string(kMaxNodes) + " nodes");
  });
  return nodes;
}

std::vector<double> random_speeds(const YamlReader& r, const Node& v, const Path& p, const SimConfig& c) {
  std::optional<Node> lo_node, hi_node;
  r.section(v, p, {{"min_speed", keep(lo_node)}, {"max_speed", keep(hi_node)}});
  if (!lo_node || !hi_node) r.fail(p, "'" + p + "' needs min_speed and max_speed");
  const double lo = number_at_least(r, *lo_node, p + ".min_speed", 0, true);
  const double hi = number_at_least(r, *hi_node, p + ".max_speed", lo, false);
  Rng rng(c.seed ^ 0x5EED5EEDull);  // own stream: the profile does not shift the run's noise
  std::vector<double> speeds(size_t(c.nodes));
  for (auto& s : speeds) s = lo + (hi - lo) * rng.uniform();
  return speeds;
}

// Node models and noise from a run's metrics.jsonl; a run with fewer ranks than sim.nodes is tiled
// cyclically (fit on 4, simulate 1024).
void set_fitted(const YamlReader& r, const Node& v, const Path& p, const Node& workload, bool nodes_given,
                SimConfig& c) {
  const std::string path = r.string(v, p);
  const FittedProfile fitted = fit_profile_from_metrics(path);
  const auto& ranks = fitted.ranks;
  const size_t count = nodes_given ? size_t(c.nodes) : ranks.size();
  c.nodes = int32_t(count);
  c.alpha_s.resize(count);
  c.beta_s.resize(count);
  for (size_t i = 0; i < count; ++i) {
    c.alpha_s[i] = ranks[i % ranks.size()].alpha_s;
    c.beta_s[i] = ranks[i % ranks.size()].beta_s;
  }
  apply_fitted_workload(fitted, workload, c);
  c.profile = "fit:" + path;
}

// `profile`: a preset name, or a mapping with exactly one of preset, classes, random, fit.
void parse_profile(const YamlReader& r, const Node& v, const Path& p, const Node& workload, bool nodes_given,
                   SimConfig& c) {
  const int32_t given = nodes_given ? c.nodes : 0;
  if (v.IsScalar()) return set_preset(r, v, p, given, c);
  std::optional<Node> preset, classes, random, fit;
  r.section(
      v, p,
      {{"preset", keep(preset)}, {"classes", keep(classes)}, {"random", keep(random)}, {"fit", keep(fit)}});
  if (!v.IsMap() || v.size() != 1)
    r.fail(p, "'" + p + "' must have exactly one of preset, classes, random, fit");
  if (preset) return set_preset(r, *preset, p + ".preset", given, c);
  if (fit) return set_fitted(r, *fit, p + ".fit", workload, nodes_given, c);
  if (random) {
    set_speeds(c, random_speeds(r, *random, p + ".random", c));
    c.profile = "random";
    return;
  }
  const ClassNodes nodes = class_nodes(r, *classes, p + ".classes", c.workload.noise);
  if (nodes_given && int64_t(nodes.speeds.size()) != c.nodes) {
    r.fail(p + ".classes", "'" + p + ".classes' describes " + std::to_string(nodes.speeds.size()) +
                               " nodes but sim.nodes is " + std::to_string(c.nodes));
  }
  set_speeds(c, nodes.speeds, &nodes.fixed_speeds);
  c.noise = nodes.noise;
  c.profile = "classes";
}

SimEvent parse_event(const YamlReader& r, const Node& v, const Path& p, int32_t nodes) {
  SimEvent ev;
  bool has_step = false, has_slowdown = false, has_rank = false, has_ranks = false;
  const auto rank = [&](const Node& x, const Path& xp) {
    const int32_t k = r.int32(x, xp);
    r.require(k >= 0 && k < nodes, x, xp, "must be a rank in 0.." + std::to_string(nodes - 1));
    ev.ranks.push_back(k);
  };
  r.section(v, p,
            {{"at_step",
              [&](const Node& x, const Path& xp) {
                ev.at_step = r.integer(x, xp);
                r.require(ev.at_step >= 0, x, xp, "must be >= 0");
                has_step = true;
              }},
             {"ranks",
              [&](const Node& x, const Path& xp) {
                r.list(x, xp, rank);
                has_ranks = true;
              }},
             {"rank",
              [&](const Node& x, const Path& xp) {
                rank(x, xp);
                has_rank = true;
              }},
             {"slowdown",
              [&](const Node& x, const Path& xp) {
                ev.slowdown = number_at_least(r, x, xp, 0, true);
                has_slowdown = true;
              }},
             {"duration_steps",
              [&](const Node& x, const Path& xp) {
                ev.duration_steps = r.integer(x, xp);
                r.require(ev.duration_steps >= 0, x, xp, "must be >= 0 (0 = permanent)");
              }},
             {"period_steps", [&](const Node& x, const Path& xp) {
                ev.period_steps = r.integer(x, xp);
                r.require(ev.period_steps == 0 || ev.period_steps >= 2, x, xp,
                          "must be 0 (no drift) or >= 2 (steps per drift cycle)");
              }}});
  if (!v.IsMap()) {
    r.fail(p, "'" + p + "' must be a mapping {at_step, ranks, slowdown, duration_steps, period_steps}");
  }
  if (!has_step || !has_slowdown) r.fail(p, "'" + p + "' needs at_step and slowdown");
  if (has_rank && has_ranks) r.fail(p, "'" + p + "' gives ranks or rank, not both");
  if (!has_rank && !has_ranks) r.fail(p, "'" + p + "' needs ranks (or rank)");
  return ev;
}

}  // namespace

double SimEvent::factor_at(int64_t t) const {
  const bool active = at_step <= t && (duration_steps == 0 || t < at_step + duration_steps);
  if (!active || (!drift() && duration_steps == 0)) return 1.0;
  if (!drift()) return slowdown;
  return drift_factor(slowdown, t - at_step, period_steps);
}

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
  const ConfigOrigin where(origin);
  const YamlReader r(where);
  Node root = load_yaml_text(yaml_text, origin);
  if (root.IsMap() && root.size() == 1 && root["sim"]) root = root["sim"];
  SimConfig c;
  // Keys that depend on others (profile on nodes, seed and workload; events on the node count)
  // are read after the section, whatever their order in the text.
  bool nodes_given = false;
  std::optional<Node> workload, profile, events;
  r.section(root, "sim",
            {{"nodes",
              [&](const Node& v, const Path& p) {
                const int64_t n = r.integer(v, p);
                r.require(n >= 1 && n <= kMaxNodes, v, p, "must be in 1.." + std::to_string(kMaxNodes));
                c.nodes = int32_t(n);
                nodes_given = true;
              }},
             {"seed", [&](const Node& v, const Path& p) { c.seed = r.unsigned_integer(v, p); }},
             {"max_steps",
              [&](const Node& v, const Path& p) {
                c.max_steps = r.integer(v, p);
                r.require(c.max_steps >= 0, v, p, "must be >= 0 (0 = no limit)");
              }},
             {"workload",
              [&](const Node& v, const Path& p) {
                r.section(v, p, workload_fields(r, c.workload));
                workload = v;
              }},
             {"profile", keep(profile)},
             {"events", keep(events)}});
  if (profile) {
    parse_profile(r, *profile, "sim.profile", workload.value_or(Node()), nodes_given, c);
  } else {
    set_speeds(c, preset_speeds("uniform", c.nodes));
  }
  if (events) {
    r.list(*events, "sim.events",
           [&](const Node& v, const Path& p) { c.events.push_back(parse_event(r, v, p, c.nodes)); });
  }
  std::stable_sort(c.events.begin(), c.events.end(),
                   [](const SimEvent& a, const SimEvent& b) { return a.at_step < b.at_step; });
  return c;
}

}  // namespace dynamix
