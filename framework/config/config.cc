// DYNAMIX — run configuration: one table of keys per YAML section, then cross-key checks.
#include "framework/config/config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "agent/ppo/rules.h"
#include "framework/core/error.h"
#include "framework/core/yaml_reader.h"

namespace dynamix {
namespace {

using Node = YAML::Node;
using Path = std::string;
using Fields = std::vector<YamlReader::Field>;

std::string fmt(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// One enumerated key: the reader's error names the key, the file and the allowed spellings.
template <class E>
E read_choice(const YamlReader& r, const Node& v, const Path& p) {
  return parse_choice<E>(r.choice(v, p, choice_names<E>()), p);
}

Fields dataset_fields(DatasetConfig& d, const YamlReader& r) {
  return {
      {"name",
       [&](const Node& v, const Path& p) {
         d.name = r.choice(v, p,
                           {"fashion_mnist", "mnist", "cifar10", "cifar100", "synthetic", "synthetic_tokens",
                            "text", "synthetic_interactions", "npy"});
       }},
      {"path", [&](const Node& v, const Path& p) { d.path = r.string(v, p); }},
      {"augment", [&](const Node& v, const Path& p) { d.augment = r.boolean(v, p); }},
      {"workers",
       [&](const Node& v, const Path& p) {
         d.workers = r.int32(v, p);
         r.require(d.workers >= 0 && d.workers <= 64, v, p, "must be 0 (auto) to 64");
       }},
      {"train_size",
       [&](const Node& v, const Path& p) {
         d.train_size = r.integer(v, p);
         r.require(d.train_size >= 1, v, p, "must be >= 1");
       }},
      {"test_size",
       [&](const Node& v, const Path& p) {
         d.test_size = r.integer(v, p);
         r.require(d.test_size >= 1, v, p, "must be >= 1");
       }},
      {"shape",
       [&](const Node& v, const Path& p) {
         d.shape = r.integer_list(v, p);
         r.require(!d.shape.empty() && d.shape.size() <= 3, v, p, "must have 1 to 3 dimensions");
         for (size_t i = 0; i < d.shape.size(); ++i) {
           r.require(d.shape[i] >= 1, v[i], p + "[" + std::to_string(i) + "]", "must be >= 1");
         }
       }},
      {"classes",
       [&](const Node& v, const Path& p) {
         d.classes = r.integer(v, p);
         r.require(d.classes >= 1, v, p, "must be >= 1");
       }},
      {"seq_len",
       [&](const Node& v, const Path& p) {
         d.seq_len = r.integer(v, p);
         r.require(d.seq_len >= 1, v, p, "must be >= 1");
       }},
      {"vocab", [&](const Node& v, const Path& p) { d.vocab = r.string(v, p); }},
      {"users",
       [&](const Node& v, const Path& p) {
         d.users = r.integer(v, p);
         r.require(d.users >= 1, v, p, "must be >= 1");
       }},
      {"items",
       [&](const Node& v, const Path& p) {
         d.items = r.integer(v, p);
         r.require(d.items >= 1, v, p, "must be >= 1");
       }},
      {"train_inputs", [&](const Node& v, const Path& p) { d.train_inputs = r.string(v, p); }},
      {"train_labels", [&](const Node& v, const Path& p) { d.train_labels = r.string(v, p); }},
      {"test_inputs", [&](const Node& v, const Path& p) { d.test_inputs = r.string(v, p); }},
      {"test_labels", [&](const Node& v, const Path& p) { d.test_labels = r.string(v, p); }},
  };
}

Fields train_fields(TrainConfig& t, const YamlReader& r) {
  return {
      {"epochs",
       [&](const Node& v, const Path& p) {
         t.epochs = r.number(v, p);
         r.require(t.epochs > 0, v, p, "must be > 0 (limit the run with train.max_steps)");
       }},
      {"max_steps",
       [&](const Node& v, const Path& p) {
         t.max_steps = r.integer(v, p);
         r.require(t.max_steps >= 0, v, p, "must be >= 0 (0 = no step limit)");
       }},
      {"lr",
       [&](const Node& v, const Path& p) {
         t.lr = r.number(v, p);
         r.require(t.lr > 0, v, p, "must be > 0");
       }},
      {"device", [&](const Node& v, const Path& p) { t.device = read_choice<DeviceChoice>(r, v, p); }},
      {"precision",
       [&](const Node& v, const Path& p) {
         // fp16 is for CUDA (checked when the device is known); its gradients need loss scaling.
         t.precision = read_choice<Precision>(r, v, p);
       }},
      {"loss_scale", [&](const Node& v, const Path& p) { t.loss_scale = read_choice<LossScaling>(r, v, p); }},
      {"loss_scale_init",
       [&](const Node& v, const Path& p) {
         t.loss_scale_init = r.number(v, p);
         r.require(t.loss_scale_init >= 1 && std::isfinite(t.loss_scale_init), v, p,
                   "must be a finite number >= 1");
       }},
      {"loss_scale_growth_interval",
       [&](const Node& v, const Path& p) {
         t.loss_scale_growth_interval = r.integer(v, p);
         r.require(t.loss_scale_growth_interval >= 1, v, p, "must be >= 1");
       }},
      {"loss", [&](const Node& v, const Path& p) { t.loss = read_choice<LossKind>(r, v, p); }},
      {"channels_last", [&](const Node& v, const Path& p) { t.channels_last = r.boolean(v, p); }},
      {"cudnn_benchmark", [&](const Node& v, const Path& p) { t.cudnn_benchmark = r.boolean(v, p); }},
      {"keep_host_memory", [&](const Node& v, const Path& p) { t.keep_host_memory = r.boolean(v, p); }},
      {"huge_pages", [&](const Node& v, const Path& p) { t.huge_pages = r.boolean(v, p); }},
      {"optimizer", [&](const Node& v, const Path& p) { t.optimizer = read_choice<Optimizer>(r, v, p); }},
      {"momentum",
       [&](const Node& v, const Path& p) {
         t.momentum = r.number(v, p);
         r.require(t.momentum >= 0 && t.momentum < 1, v, p, "must be in [0, 1)");
       }},
      {"nesterov", [&](const Node& v, const Path& p) { t.nesterov = r.boolean(v, p); }},
      {"weight_decay",
       [&](const Node& v, const Path& p) {
         t.weight_decay = r.number(v, p);
         r.require(t.weight_decay >= 0, v, p, "must be >= 0");
       }},
      {"lr_scaling", [&](const Node& v, const Path& p) { t.lr_scaling = read_choice<LrScaling>(r, v, p); }},
      {"warmup_steps",
       [&](const Node& v, const Path& p) {
         t.warmup_steps = r.integer(v, p);
         r.require(t.warmup_steps >= 0, v, p, "must be >= 0");
       }},
      {"target_accuracy",
       [&](const Node& v, const Path& p) {
         t.target_accuracy.reset();
         if (v.IsNull()) return;  // null = no target
         t.target_accuracy = r.number(v, p);
         r.require(*t.target_accuracy >= 0 && *t.target_accuracy <= 1, v, p, "must be in [0, 1]");
       }},
      {"seed", [&](const Node& v, const Path& p) { t.seed = r.unsigned_integer(v, p); }},
      {"eval_every",
       [&](const Node& v, const Path& p) {
         t.eval_every = r.integer(v, p);
         r.require(t.eval_every >= 0, v, p, "must be >= 0 (0 = at epoch ends only)");
       }},
  };
}

Fields batch_fields(BatchConfig& b, const YamlReader& r) {
  return {
      {"init",
       [&](const Node& v, const Path& p) {
         b.init.clear();
         if (!v.IsSequence()) {
           b.init.push_back(r.int32(v, p));
           return;
         }
         r.require(v.size() > 0, v, p, "must be one integer or a non-empty list");
         r.list(v, p, [&](const Node& e, const Path& ep) { b.init.push_back(r.int32(e, ep)); });
       }},
      {"min",
       [&](const Node& v, const Path& p) {
         b.min = r.int32(v, p);
         r.require(b.min >= 1, v, p, "must be >= 1");
       }},
      {"max", [&](const Node& v, const Path& p) { b.max = r.int32(v, p); }},
      {"multiple",
       [&](const Node& v, const Path& p) {
         b.multiple = r.int32(v, p);
         r.require(b.multiple >= 1, v, p, "must be >= 1");
       }},
      {"global", [&](const Node& v, const Path& p) { b.global = read_choice<GlobalBatch>(r, v, p); }},
  };
}

Fields policy_fields(PolicyConfig& pc, const YamlReader& r) {
  return {
      {"name", [&](const Node& v, const Path& p) { pc.name = r.choice(v, p, policy_names()); }},
      {"window",
       [&](const Node& v, const Path& p) {
         pc.window = r.integer(v, p);
         r.require(pc.window >= 1, v, p, "must be >= 1");
       }},
      {"checkpoint", [&](const Node& v, const Path& p) { pc.checkpoint = r.string(v, p); }},
      {"learn", [&](const Node& v, const Path& p) { pc.learn = r.boolean(v, p); }},
      {"shadow", [&](const Node& v, const Path& p) { pc.shadow = r.boolean(v, p); }},
      {"replay", [&](const Node& v, const Path& p) { pc.replay = r.string(v, p); }},
      {"min_move_gain",
       [&](const Node& v, const Path& p) {
         pc.min_move_gain = r.number(v, p);
         r.require(*pc.min_move_gain >= 0 && *pc.min_move_gain < 1, v, p, "must be in [0, 1)");
       }},
      {"rules_off",
       [&](const Node& v, const Path& p) {
         // A list of rule names; one name alone is a list of one (`--set policy.rules_off=tracking`).
         const std::vector<std::string> names(rule_names().begin(), rule_names().end());
         pc.rules_off.clear();
         if (v.IsScalar()) {
           pc.rules_off.push_back(r.choice(v, p, names));
           return;
         }
         r.list(v, p, [&](const Node& e, const Path& ep) { pc.rules_off.push_back(r.choice(e, ep, names)); });
       }},
  };
}

// Reads one list of per-rank factors, each checked against `least`: one entry per rank, or one for
// all; a single number is that one entry (`--set hetero.slowdown=2`, as the count check's "give 1
// entry" invites).
void read_per_rank(const YamlReader& r, const Node& v, const Path& p, double least,
                   std::vector<double>& out) {
  if (v.IsScalar()) {
    out = {r.number(v, p)};
    r.require(out[0] >= least, v, p, "must be >= " + fmt(least));
    return;
  }
  out = r.number_list(v, p);
  for (size_t i = 0; i < out.size(); ++i) {
    r.require(out[i] >= least, v[i], p + "[" + std::to_string(i) + "]", "must be >= " + fmt(least));
  }
}

Fields event_fields(HeteroEvent& e, const YamlReader& r) {
  return {
      {"at_step",
       [&](const Node& v, const Path& p) {
         e.at_step = r.integer(v, p);
         r.require(e.at_step >= 0, v, p, "must be >= 0");
       }},
      {"rank",
       [&](const Node& v, const Path& p) {
         e.rank = r.int32(v, p);
         r.require(e.rank >= 0, v, p, "must be >= 0");
       }},
      {"slowdown",
       [&](const Node& v, const Path& p) {
         if (v.IsNull()) return;
         e.slowdown = r.number(v, p);
         r.require(*e.slowdown >= 1, v, p, "must be >= 1");
       }},
      {"bandwidth_mbps",
       [&](const Node& v, const Path& p) {
         if (v.IsNull()) return;
         e.bandwidth_mbps = r.number(v, p);
         r.require(*e.bandwidth_mbps >= 0, v, p, "must be >= 0 (0 = unlimited)");
       }},
      {"period_steps",
       [&](const Node& v, const Path& p) {
         e.period_steps = r.integer(v, p);
         r.require(e.period_steps == 0 || e.period_steps >= 2, v, p, "must be 0 (a step change) or >= 2");
       }},
  };
}

Fields hetero_fields(HeteroConfig& h, const YamlReader& r) {
  return {
      {"slowdown", [&](const Node& v, const Path& p) { read_per_rank(r, v, p, 1.0, h.slowdown); }},
      {"bandwidth_mbps",
       [&](const Node& v, const Path& p) { read_per_rank(r, v, p, 0.0, h.bandwidth_mbps); }},
      {"memory_mb", [&](const Node& v, const Path& p) { read_per_rank(r, v, p, 0.0, h.memory_mb); }},
      {"jitter", [&](const Node& v, const Path& p) { read_per_rank(r, v, p, 0.0, h.jitter); }},
      {"step_overhead_ms",
       [&](const Node& v, const Path& p) { read_per_rank(r, v, p, 0.0, h.step_overhead_ms); }},
      {"events",
       [&](const Node& v, const Path& p) {
         h.events.clear();
         r.list(v, p, [&](const Node& ev, const Path& ep) {
           HeteroEvent e;
           if (!ev.IsMap()) {
             r.fail(ep,
                    "'" + ep + "' must be a mapping {at_step, rank, slowdown, bandwidth_mbps, period_steps}");
           }
           r.section(ev, ep, event_fields(e, r));
           if (!e.slowdown && !e.bandwidth_mbps) {
             r.fail(ep, "'" + ep + "' must set 'slowdown' or 'bandwidth_mbps' (or both)");
           }
           if (e.period_steps > 0 && (!e.slowdown || e.bandwidth_mbps)) {
             r.fail(ep, "'" + ep +
                            "' is a drift (period_steps): it must set 'slowdown' and not 'bandwidth_mbps'");
           }
           h.events.push_back(e);
         });
       }},
  };
}

Fields monitor_fields(MonitorConfig& m, const YamlReader& r) {
  return {{"ebpf", [&](const Node& v, const Path& p) { m.ebpf = read_choice<EbpfMode>(r, v, p); }},
          {"enabled", [&](const Node& v, const Path& p) { m.enabled = r.boolean(v, p); }}};
}

Fields comm_fields(CommConfig& cc, const YamlReader& r) {
  return {
      {"bucket_mb",
       [&](const Node& v, const Path& p) {
         cc.bucket_mb = r.number(v, p);
         r.require(cc.bucket_mb > 0 && cc.bucket_mb <= 4096, v, p, "must be in (0, 4096]");
       }},
      {"compression",
       [&](const Node& v, const Path& p) { cc.compression = read_choice<Compression>(r, v, p); }},
      {"hlc_ratio",
       [&](const Node& v, const Path& p) {
         cc.hlc_ratio = r.number(v, p);
         r.require(cc.hlc_ratio >= 1.0 && cc.hlc_ratio <= 16.0, v, p,
                   "must be in [1, 16] (sketch cells per entry)");
       }},
      {"hlc_auto", [&](const Node& v, const Path& p) { cc.hlc_auto = r.boolean(v, p); }},
      {"hlc_max_bytes_fraction",
       [&](const Node& v, const Path& p) {
         cc.hlc_max_bytes_fraction = r.number(v, p);
         r.require(cc.hlc_max_bytes_fraction > 0 && cc.hlc_max_bytes_fraction <= 1, v, p,
                   "must be in (0, 1]");
       }},
      {"overlap", [&](const Node& v, const Path& p) { cc.overlap = r.boolean(v, p); }},
      {"watchdog", [&](const Node& v, const Path& p) { cc.watchdog = r.boolean(v, p); }},
      {"timeout_s",
       [&](const Node& v, const Path& p) {
         cc.timeout_s = r.number(v, p);
         r.require(cc.timeout_s >= 1, v, p, "must be >= 1 (seconds)");
       }},
      {"heartbeat_timeout_s",
       [&](const Node& v, const Path& p) {
         cc.heartbeat_timeout_s = r.number(v, p);
         r.require(cc.heartbeat_timeout_s >= 2, v, p,
                   "must be >= 2 (seconds; heartbeats are sent every second)");
       }},
      {"watchdog_interface",
       [&](const Node& v, const Path& p) {
         cc.watchdog_interface = r.string(v, p);
         r.require(cc.watchdog_interface.size() < 16 &&
                       cc.watchdog_interface.find_first_of(" /%") == std::string::npos,
                   v, p, "must be a network interface name (eth0, ib0, lo; at most 15 characters)");
       }},
      {"watchdog_family",
       [&](const Node& v, const Path& p) { cc.watchdog_family = read_choice<AddressFamily>(r, v, p); }},
  };
}

Fields output_fields(OutputConfig& o, const YamlReader& r) {
  return {
      {"dir",
       [&](const Node& v, const Path& p) {
         o.dir = r.string(v, p);
         r.require(!o.dir.empty(), v, p, "must not be empty");
       }},
      {"checkpoint_every",
       [&](const Node& v, const Path& p) {
         o.checkpoint_every = r.integer(v, p);
         r.require(o.checkpoint_every >= 0, v, p, "must be >= 0 (0 = at the end only)");
       }},
      {"sample_log", [&](const Node& v, const Path& p) { o.sample_log = r.boolean(v, p); }},
      {"progress", [&](const Node& v, const Path& p) { o.progress = read_choice<ProgressChoice>(r, v, p); }},
      {"progress_interval_s",
       [&](const Node& v, const Path& p) {
         o.progress_interval_s = r.number(v, p);
         r.require(o.progress_interval_s > 0 && std::isfinite(o.progress_interval_s), v, p,
                   "must be a finite number > 0 (seconds)");
       }},
  };
}

Fields top_fields(Config& c, const YamlReader& r) {
  return {
      {"model",
       [&](const Node& v, const Path& p) {
         c.model = r.string(v, p);
         r.require(!c.model.empty(), v, p, "must name a model (cnn, mlp, resnet18, ...)");
       }},
      {"dataset", [&](const Node& v, const Path& p) { r.section(v, p, dataset_fields(c.dataset, r)); }},
      {"train", [&](const Node& v, const Path& p) { r.section(v, p, train_fields(c.train, r)); }},
      {"batch", [&](const Node& v, const Path& p) { r.section(v, p, batch_fields(c.batch, r)); }},
      {"policy", [&](const Node& v, const Path& p) { r.section(v, p, policy_fields(c.policy, r)); }},
      {"hetero", [&](const Node& v, const Path& p) { r.section(v, p, hetero_fields(c.hetero, r)); }},
      {"monitor", [&](const Node& v, const Path& p) { r.section(v, p, monitor_fields(c.monitor, r)); }},
      {"placement",
       [&](const Node& v, const Path& p) {
         r.section(v, p, {{"bind", [&](const Node& b, const Path& q) {
                             c.placement.bind = read_choice<PlacementBind>(r, b, q);
                           }}});
       }},
      {"backend", [&](const Node& v, const Path& p) { c.backend = read_choice<Backend>(r, v, p); }},
      {"comm", [&](const Node& v, const Path& p) { r.section(v, p, comm_fields(c.comm, r)); }},
      {"output", [&](const Node& v, const Path& p) { r.section(v, p, output_fields(c.output, r)); }},
      {"sim",
       [&](const Node& v, const Path& p) {
         // Kept as text: the simulator (agent/sim) owns and validates this block.
         if (v.IsNull()) return;
         if (!v.IsMap()) r.fail(p, "'sim' must be a mapping, see DESIGN.md (Cluster simulator)");
         c.sim_yaml = emit_yaml(v);
       }},
  };
}

// Checks that involve more than one key.
void check_relations(const Config& c, const ConfigOrigin& origin) {
  const BatchConfig& b = c.batch;
  if (b.max < b.min) {
    origin.fail_keys({"batch.min", "batch.max"}, "'batch.min' (" + std::to_string(b.min) +
                                                     ") must not exceed 'batch.max' (" +
                                                     std::to_string(b.max) + ")");
  }
  for (size_t i = 0; i < b.init.size(); ++i) {
    const std::string key =
        "'" + (b.init.size() == 1 ? std::string("batch.init") : "batch.init[" + std::to_string(i) + "]") +
        "' (" + std::to_string(b.init[i]) + ")";
    if (b.init[i] < b.min || b.init[i] > b.max) {
      origin.fail_keys({"batch.init", "batch.min", "batch.max"},
                       key + " must be within ['batch.min', 'batch.max'] = [" + std::to_string(b.min) + ", " +
                           std::to_string(b.max) + "]");
    }
    if (b.init[i] % b.multiple != 0) {
      origin.fail_keys({"batch.init", "batch.multiple"},
                       key + " must be a multiple of 'batch.multiple' (" + std::to_string(b.multiple) + ")");
    }
  }
  if (c.policy.shadow && !c.policy.replay.empty()) {
    origin.fail_keys(
        {"policy.shadow", "policy.replay"},
        "'policy.shadow' keeps the plan in force and 'policy.replay' replaces it: set one of them");
  }
  if (c.train.nesterov && c.train.momentum <= 0) {
    origin.fail_keys({"train.nesterov", "train.momentum"},
                     "'train.nesterov' needs 'train.momentum' > 0, got " + fmt(c.train.momentum));
  }
}

}  // namespace

Config parse_config(const std::string& yaml_text, const std::string& origin,
                    const std::vector<std::string>& overrides) {
  ConfigOrigin where(origin);
  YAML::Node root = load_yaml_text(yaml_text, origin);
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);  // empty file: all defaults
  if (!root.IsMap()) where.fail("", "the top level must be a mapping of keys (model, train, batch, ...)");
  for (const auto& o : overrides) apply_override(root, o, where);
  check_no_control_characters(root, "", where);

  Config config;
  const YamlReader reader(where);
  reader.section(root, "", top_fields(config, reader));
  check_relations(config, where);
  config.source = emit_yaml(root);
  return config;
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error("config file '" + path + "' does not exist");
  if (S_ISDIR(st.st_mode)) throw Error("config file '" + path + "' is a directory, expected a YAML file");
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) throw Error("config file '" + path + "' could not be opened for reading");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error("config file '" + path + "' could not be read");
  // An empty document (0 bytes, only comments or blank lines, a bare '---') is almost always a
  // mistake (a truncated copy, the wrong file): refuse it rather than run every default.
  if (load_yaml_text(text.str(), path).IsNull()) {
    throw Error("config file '" + path + "' is empty (no settings, only blank lines or comments)");
  }
  return parse_config(text.str(), path, overrides);
}

namespace {
// A per-rank list must have one entry (every rank) or one per rank; some lists may also be empty.
void check_count(const char* key, size_t count, int world_size, bool empty_ok) {
  DYNAMIX_CHECK(world_size >= 1, "world size must be >= 1, got " + std::to_string(world_size));
  if (count == 1 || count == static_cast<size_t>(world_size) || (empty_ok && count == 0)) return;
  throw Error("'" + std::string(key) + "' has " + std::to_string(count) + " entries but the world has " +
              std::to_string(world_size) + " ranks (give 1 entry or " + std::to_string(world_size) + ")");
}

// The one list of per-rank settings: visit(key, list, empty_ok) for each. Config may be const or
// not, so validation reads the lists and adaptation to a new world rewrites them.
template <class C, class Visit>
void for_each_rank_list(C& config, Visit&& visit) {
  visit("batch.init", config.batch.init, false);
  visit("hetero.slowdown", config.hetero.slowdown, true);
  visit("hetero.bandwidth_mbps", config.hetero.bandwidth_mbps, true);
  visit("hetero.memory_mb", config.hetero.memory_mb, true);
  visit("hetero.jitter", config.hetero.jitter, true);
  visit("hetero.step_overhead_ms", config.hetero.step_overhead_ms, true);
}
}  // namespace

void validate_for_world(const Config& config, int world_size) {
  for_each_rank_list(config, [&](const char* key, const auto& list, bool empty_ok) {
    check_count(key, list.size(), world_size, empty_ok);
  });
  for (size_t i = 0; i < config.hetero.events.size(); ++i) {
    const int rank = config.hetero.events[i].rank;
    if (rank >= world_size) {
      throw Error("'hetero.events[" + std::to_string(i) + "].rank' is " + std::to_string(rank) +
                  " but the world has " + std::to_string(world_size) + " ranks (0.." +
                  std::to_string(world_size - 1) + ")");
    }
  }
}

namespace {
template <class T>
void tile_list(const char* key, std::vector<T>& list, int world_size, std::vector<std::string>& notes) {
  const size_t n = static_cast<size_t>(world_size);
  if (list.size() <= 1 || list.size() == n) return;
  std::vector<T> tiled(n);
  std::ostringstream shown;
  for (size_t i = 0; i < n; ++i) {
    tiled[i] = list[i % list.size()];
    shown << (i ? "," : "") << tiled[i];
  }
  notes.push_back(std::string(key) + " has " + std::to_string(list.size()) + " entries for " +
                  std::to_string(n) + " ranks: rank i takes entry i mod " + std::to_string(list.size()) +
                  ", now [" + shown.str() + "]");
  list = std::move(tiled);
}
}  // namespace

std::vector<std::string> adapt_to_world(Config& config, int world_size) {
  DYNAMIX_CHECK(world_size >= 1, "world size must be >= 1, got " + std::to_string(world_size));
  std::vector<std::string> notes;
  for_each_rank_list(config, [&](const char* key, auto& list, bool /*empty_ok*/) {
    tile_list(key, list, world_size, notes);
  });
  auto& events = config.hetero.events;
  const auto gone = std::remove_if(events.begin(), events.end(),
                                   [&](const HeteroEvent& e) { return e.rank >= world_size; });
  if (gone != events.end()) {
    notes.push_back("hetero.events: " + std::to_string(events.end() - gone) +
                    " event(s) of ranks >= " + std::to_string(world_size) + " dropped");
    events.erase(gone, events.end());
  }
  return notes;
}

std::vector<int32_t> initial_batches(const Config& config, int world_size) {
  check_count("batch.init", config.batch.init.size(), world_size, false);
  const auto& init = config.batch.init;
  if (init.size() == 1) return std::vector<int32_t>(static_cast<size_t>(world_size), init[0]);
  return init;
}

std::vector<std::string> policy_names() { return {"static", "proportional", "gns", "dynamix"}; }

}  // namespace dynamix
