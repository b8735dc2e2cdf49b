// DYNAMIX — run configuration: YAML file + `--set key.sub=value` overrides, validated up front.
// Keys and meanings: ../shared/DESIGN.md ("Outputs", "Heterogeneity emulation"). Unknown keys,
// wrong types and impossible values raise dynamix::Error naming the key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "framework/config/choices.h"

namespace dynamix {

struct DatasetConfig {
  std::string name = "fashion_mnist";  // fashion_mnist | mnist | cifar10 | cifar100 | synthetic |
                                       // synthetic_tokens | text | synthetic_interactions | npy
  std::string
      path;  // directory or file; default per dataset (fashion_mnist: /usr/share/datasets/fashion-mnist)
  bool augment = false;  // CIFAR-style random crop + flip on the training set
  // Threads that load one training batch (chunks joined in order; the batch is the same for any
  // number). 0 = auto: 1 on a CPU, where loading overlaps compute on the same cores; on a GPU the
  // rank's intra-op threads, at most 8, as the CPU is free while the GPU computes.
  int workers = 0;
  // synthetic / text only:
  int64_t train_size = 4096;                 // synthetic samples in the training split
  int64_t test_size = 1024;                  // synthetic samples in the test split
  std::vector<int64_t> shape = {3, 32, 32};  // synthetic image shape (C, H, W)
  int64_t classes = 10;                      // synthetic classes
  int64_t seq_len = 128;                     // synthetic tokens / text MLM sequence length
  std::string vocab;      // text: vocabulary file (one token per line); empty = built from the text
  int64_t users = 10000;  // synthetic_interactions: user ids
  int64_t items = 5000;   // synthetic_interactions: item ids
  // npy: the four .npy files; an empty one is path/<key>.npy (path: a folder, e.g. from
  // scripts/tools/to_npy.py)
  std::string train_inputs, train_labels, test_inputs, test_labels;
};

struct TrainConfig {
  double epochs = 1;      // may be fractional; the run ends at epochs or max_steps, whichever first
  int64_t max_steps = 0;  // 0 = no step limit
  double lr = 0.01;       // lr0 at the initial global batch B0
  Optimizer optimizer = Optimizer::kSgd;
  double momentum = 0.9;                      // sgd
  bool nesterov = false;                      // sgd
  double weight_decay = 0.0;                  // sgd (L2) and adamw (decoupled)
  LrScaling lr_scaling = LrScaling::kLinear;  // lr(B) = lr0 * f(B / B0)
  int64_t warmup_steps = 0;                   // linear warmup from 0 to lr(B)
  std::optional<double> target_accuracy;      // in [0, 1]; time_to_target_s is recorded when reached
  uint64_t seed = 42;
  int64_t eval_every = 0;  // evaluate every N steps (0 = at epoch ends and at the end only)
  DeviceChoice device = DeviceChoice::kAuto;  // cuda: the node-local rank's GPU
  Precision precision = Precision::kFp32;     // autocast of forward; float32 weights; fp16 on CUDA
  bool channels_last = false;                 // 4-D weights and inputs in channels_last (CNNs)
  bool cudnn_benchmark = false;  // CUDA: let cuDNN time its algorithms per shape (LibTorch's default: off)
  // Freed host memory stays in the process for reuse (framework/core/host_memory.h); false: the
  // C library's defaults.
  bool keep_host_memory = true;
  // With host memory kept: the heap in transparent huge pages (HeapHugePages); false: 4 KiB pages.
  bool huge_pages = true;
  // cross_entropy | mse (outputs against one-hot targets) | module (the model's forward(x, y)
  // returns its loss); see framework/train/objective.h.
  LossKind loss = LossKind::kCrossEntropy;
  // auto: dynamic with fp16, none otherwise. dynamic: the loss is multiplied by a scale S before
  // backward, gradients by 1/S while packed; a step whose averaged gradient is not finite is
  // skipped and S halved; S doubles after loss_scale_growth_interval finite steps in a row.
  LossScaling loss_scale = LossScaling::kAuto;
  double loss_scale_init = 65536.0;
  int64_t loss_scale_growth_interval = 2000;
};

struct BatchConfig {
  std::vector<int32_t> init = {32};  // one value (every rank) or one per rank
  int32_t min = 1;
  int32_t max = 1024;
  // Every rank's batch a multiple of this, in every plan of every policy (BatchBounds::multiple).
  int32_t multiple = 1;
  GlobalBatch global = GlobalBatch::kFixed;  // whether policies must keep sum b_i constant
};

// Every `policy.name` a config may give (also what `sim` and `agent eval --policies` accept).
std::vector<std::string> policy_names();

struct PolicyConfig {
  // static | proportional | gns | dynamix: a name, not an enum: policies are a registry the agent
  // library owns (make_baseline_policy, the simulator's --policies), and it knows no config.
  std::string name = "static";
  int64_t window = 20;     // decision window in steps
  std::string checkpoint;  // dynamix: policy file; empty = the shipped policy; "none" = from scratch
  bool learn = false;      // dynamix: fine-tune online (false: inference only)
  // Any policy: decide every window and log the plan it proposes (decisions.jsonl "proposed"), but
  // keep the plan in force: a dry run on a real cluster, and a control that measures what running
  // the policy costs apart from its moves. The policy is not told: it sees the plan kept as the
  // ranks' batches. `dynamix train` only (a simulated run in shadow is static's).
  bool shadow = false;
  // Any policy, `dynamix train` only: an earlier run's decisions.jsonl whose plans are put in force
  // at the steps it lists, the policy's own plan logged as "proposed" (framework/train/plan_replay.h).
  // Empty: the policy's plans are.
  std::string replay;
  // dynamix: the share of the slowest rank's step a plan move must forecast to gain, in [0, 1),
  // at most (less where the models forecast within the ranks' noise); unset = the agent's default
  // (DynamixOptions::min_move_gain, docs/AGENT.md items 19 and 22).
  std::optional<double> min_move_gain;
  // dynamix: engineered rules switched off, to measure what each adds (agent/ppo/rules.h names
  // them; docs/RESULTS.md §3a); empty = all in force.
  std::vector<std::string> rules_off;
};

struct HeteroEvent {
  int64_t at_step = 0;
  int32_t rank = 0;
  std::optional<double> slowdown;        // new compute slowdown factor (>= 1)
  std::optional<double> bandwidth_mbps;  // new link cap (0 = unlimited)
  // > 0: a drift. From at_step to the end of the run the rank's slowdown is multiplied by a factor
  // moving smoothly from 1 to `slowdown` and back every period_steps steps (drift_factor).
  int64_t period_steps = 0;
};

struct HeteroConfig {
  std::vector<double> slowdown;        // per rank, >= 1; empty = all 1
  std::vector<double> bandwidth_mbps;  // per rank, >= 0 (0 = unlimited); empty = all unlimited
  std::vector<double> memory_mb;       // per rank emulated device memory, >= 0 (0 = unlimited)
  // per rank relative std of a step's compute time, >= 0 (a shared node: each step's slowdown is
  // multiplied by a mean-one log-normal draw); empty = all 0
  std::vector<double> jitter;
  // per rank fixed milliseconds added to every training step's compute, >= 0, which the slowdown
  // does not scale: a slow host path or a data loader's fixed work, so ranks differ in their
  // fixed cost per step (their knee alpha/beta) and not only in speed; empty = all 0
  std::vector<double> step_overhead_ms;
  std::vector<HeteroEvent> events;
};

struct MonitorConfig {
  EbpfMode ebpf = EbpfMode::kAuto;
  bool enabled = true;  // false: no system/network probes at all (monitor_source "none")
};

struct PlacementConfig {
  // auto (bind unless the launcher already has) | none | numa (the GPU's NUMA node; CPU: a node
  // per rank) | core (a disjoint share of cores per rank of the node)
  PlacementBind bind = PlacementBind::kAuto;
};

struct CommConfig {
  double bucket_mb = 25.0;  // fused bucket size
  bool overlap = true;      // reduce buckets during backward (autograd hooks + comm thread)
  Compression compression = Compression::kNone;
  double hlc_ratio = 1.5;               // hlc: count-sketch cells per union entry
  bool hlc_auto = true;                 // hlc: go dense per bucket when compression would not pay
  double hlc_max_bytes_fraction = 0.5;  // hlc: compress only below this fraction of dense bytes
  bool watchdog = true;                 // bound collectives and detect lost ranks (multi-rank runs)
  double timeout_s = 300;               // longest any one collective may take
  double heartbeat_timeout_s = 30;      // silence after which a rank counts as lost
  std::string watchdog_interface;       // the watchdog's network interface ("" = any that is up)
  AddressFamily watchdog_family = AddressFamily::kAuto;  // auto | ipv4 | ipv6
};

struct OutputConfig {
  std::string dir = "runs/default";
  int64_t checkpoint_every = 0;  // steps between checkpoints (0 = only at the end and on signals)
  bool sample_log = false;       // debug: samples.jsonl, the dataset indices every rank trained on per step
  // Rank 0's console between evaluations (framework/train/progress.h): auto (tty on a terminal,
  // lines otherwise) | tty | lines | json | quiet.
  ProgressChoice progress = ProgressChoice::kAuto;
  double progress_interval_s = 10;  // lines and json: seconds between progress lines
};

struct Config {
  std::string model = "cnn";
  DatasetConfig dataset;
  TrainConfig train;
  BatchConfig batch;
  PolicyConfig policy;
  HeteroConfig hetero;
  MonitorConfig monitor;
  Backend backend = Backend::kAuto;
  CommConfig comm;
  PlacementConfig placement;
  OutputConfig output;

  std::string sim_yaml;  // raw `sim:` block (YAML), validated by the simulator (agent/sim); empty if absent

  std::string source;  // the YAML text after overrides, saved with outputs for reproducibility
};

// Parses YAML text (`origin` names it in errors) and applies overrides ("key.sub=value", the
// value parsed as YAML, e.g. "batch.init=[16,32]"). Throws dynamix::Error on any problem.
Config parse_config(const std::string& yaml_text, const std::string& origin,
                    const std::vector<std::string>& overrides = {});
// Reads the file then parse_config; a missing, unreadable or empty (no settings, only comments)
// file is an Error naming it.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});
// Checks that depend on the job: per-rank lists (batch.init, hetero.*) must have 1 or world_size
// entries, event ranks must exist. Throws dynamix::Error naming the key.
void validate_for_world(const Config& config, int world_size);
// On resume with another world size, per-rank lists written for the old world are adapted: rank i
// takes entry i mod (list length), as the simulator tiles a fitted profile; events of ranks that no
// longer exist are dropped. Returns one line per change for the log (empty: nothing changed).
std::vector<std::string> adapt_to_world(Config& config, int world_size);
// Per-rank initial batch sizes (expands a single value).
std::vector<int32_t> initial_batches(const Config& config, int world_size);

}  // namespace dynamix
