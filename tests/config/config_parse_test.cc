// DYNAMIX — config parsing: defaults, every key from YAML, saved source, --set overrides.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "framework/config/config.h"
#include "framework/core/error.h"
#include "tests/test_util.h"

namespace dynamix {
namespace {

const char* kOrigin = "configs/x.yaml";

// Every key set to a non-default value.
const char* kFullYaml = R"(
model: resnet18
dataset:
  name: synthetic
  path: /data/syn
  augment: true
  train_size: 100
  test_size: 20
  shape: [1, 28, 28]
  classes: 7
  seq_len: 64
  vocab: vocab.txt
train:
  epochs: 2.5
  max_steps: 300
  lr: 0.2
  optimizer: adamw
  momentum: 0.5
  nesterov: true
  weight_decay: 0.0005
  lr_scaling: sqrt
  warmup_steps: 10
  target_accuracy: 0.9
  seed: 18446744073709551615
  eval_every: 25
  device: cuda
  precision: fp16
  channels_last: true
  cudnn_benchmark: true
  keep_host_memory: false
  huge_pages: false
  loss_scale: none
  loss_scale_init: 1024
  loss_scale_growth_interval: 50
batch:
  init: [16, 32, 48]
  min: 4
  max: 256
  global: adaptive
policy:
  name: dynamix
  window: 7
  checkpoint: runs/p/policy.pt
  learn: false
  min_move_gain: 0.02
  rules_off: [short_spells, paid_moves]
hetero:
  slowdown: [1.0, 2.0, 4.0]
  bandwidth_mbps: [0, 0, 200]
  jitter: [0, 0.25, 0]
  step_overhead_ms: [0, 0, 12.5]
  events:
    - {at_step: 300, rank: 1, slowdown: 3.0}
    - {at_step: 400, rank: 2, bandwidth_mbps: 50}
    - {at_step: 500, rank: 0, slowdown: 3.0, period_steps: 120}
monitor:
  ebpf: off
  enabled: false
backend: mpi
comm:
  bucket_mb: 4.5
  compression: hlc
  hlc_ratio: 2.5
  hlc_auto: false
  hlc_max_bytes_fraction: 0.3
  watchdog: false
  timeout_s: 120
  heartbeat_timeout_s: 10
  watchdog_interface: eth1
  watchdog_family: ipv6
placement:
  bind: core
output:
  dir: runs/full
  checkpoint_every: 100
  sample_log: true
  progress: json
  progress_interval_s: 2.5
sim:
  nodes: 32
  workload: {alpha_s: 0.004}
)";

void expect_full(const Config& c) {
  EXPECT_EQ(c.model, "resnet18");
  EXPECT_EQ(c.dataset.name, "synthetic");
  EXPECT_EQ(c.dataset.path, "/data/syn");
  EXPECT_TRUE(c.dataset.augment);
  EXPECT_EQ(c.dataset.train_size, 100);
  EXPECT_EQ(c.dataset.test_size, 20);
  EXPECT_EQ(c.dataset.shape, (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(c.dataset.classes, 7);
  EXPECT_EQ(c.dataset.seq_len, 64);
  EXPECT_EQ(c.dataset.vocab, "vocab.txt");
  EXPECT_DOUBLE_EQ(c.train.epochs, 2.5);
  EXPECT_EQ(c.train.max_steps, 300);
  EXPECT_DOUBLE_EQ(c.train.lr, 0.2);
  EXPECT_EQ(c.train.optimizer, Optimizer::kAdamw);
  EXPECT_DOUBLE_EQ(c.train.momentum, 0.5);
  EXPECT_TRUE(c.train.nesterov);
  EXPECT_DOUBLE_EQ(c.train.weight_decay, 0.0005);
  EXPECT_EQ(c.train.lr_scaling, LrScaling::kSqrt);
  EXPECT_EQ(c.train.warmup_steps, 10);
  ASSERT_TRUE(c.train.target_accuracy.has_value());
  EXPECT_DOUBLE_EQ(*c.train.target_accuracy, 0.9);
  EXPECT_EQ(c.train.seed, 18446744073709551615ull);
  EXPECT_EQ(c.train.eval_every, 25);
  EXPECT_EQ(c.train.device, DeviceChoice::kCuda);
  EXPECT_EQ(c.train.precision, Precision::kFp16);
  EXPECT_TRUE(c.train.channels_last);
  EXPECT_TRUE(c.train.cudnn_benchmark);
  EXPECT_FALSE(c.train.keep_host_memory);
  EXPECT_FALSE(c.train.huge_pages);
  EXPECT_EQ(c.train.loss_scale, LossScaling::kNone);
  EXPECT_DOUBLE_EQ(c.train.loss_scale_init, 1024);
  EXPECT_EQ(c.train.loss_scale_growth_interval, 50);
  EXPECT_EQ(c.batch.init, (std::vector<int32_t>{16, 32, 48}));
  EXPECT_EQ(c.batch.min, 4);
  EXPECT_EQ(c.batch.max, 256);
  EXPECT_EQ(c.batch.global, GlobalBatch::kAdaptive);
  EXPECT_EQ(c.policy.name, "dynamix");
  EXPECT_EQ(c.policy.window, 7);
  EXPECT_EQ(c.policy.checkpoint, "runs/p/policy.pt");
  EXPECT_FALSE(c.policy.learn);
  ASSERT_TRUE(c.policy.min_move_gain.has_value());
  EXPECT_DOUBLE_EQ(*c.policy.min_move_gain, 0.02);
  EXPECT_EQ(c.policy.rules_off, (std::vector<std::string>{"short_spells", "paid_moves"}));
  EXPECT_EQ(c.hetero.slowdown, (std::vector<double>{1.0, 2.0, 4.0}));
  EXPECT_EQ(c.hetero.bandwidth_mbps, (std::vector<double>{0, 0, 200}));
  EXPECT_EQ(c.hetero.jitter, (std::vector<double>{0, 0.25, 0}));
  EXPECT_EQ(c.hetero.step_overhead_ms, (std::vector<double>{0, 0, 12.5}));
  ASSERT_EQ(c.hetero.events.size(), 3u);
  EXPECT_EQ(c.hetero.events[0].at_step, 300);
  EXPECT_EQ(c.hetero.events[0].rank, 1);
  EXPECT_EQ(c.hetero.events[0].slowdown, 3.0);
  EXPECT_FALSE(c.hetero.events[0].bandwidth_mbps.has_value());
  EXPECT_EQ(c.hetero.events[1].at_step, 400);
  EXPECT_EQ(c.hetero.events[1].rank, 2);
  EXPECT_FALSE(c.hetero.events[1].slowdown.has_value());
  EXPECT_EQ(c.hetero.events[1].bandwidth_mbps, 50.0);
  EXPECT_EQ(c.hetero.events[1].period_steps, 0);
  EXPECT_EQ(c.hetero.events[2].slowdown, 3.0);
  EXPECT_EQ(c.hetero.events[2].period_steps, 120);
  EXPECT_EQ(c.monitor.ebpf, EbpfMode::kOff);
  EXPECT_FALSE(c.monitor.enabled);
  EXPECT_EQ(c.backend, Backend::kMpi);
  EXPECT_DOUBLE_EQ(c.comm.bucket_mb, 4.5);
  EXPECT_EQ(c.comm.compression, Compression::kHlc);
  EXPECT_DOUBLE_EQ(c.comm.hlc_ratio, 2.5);
  EXPECT_FALSE(c.comm.hlc_auto);
  EXPECT_DOUBLE_EQ(c.comm.hlc_max_bytes_fraction, 0.3);
  EXPECT_FALSE(c.comm.watchdog);
  EXPECT_DOUBLE_EQ(c.comm.timeout_s, 120.0);
  EXPECT_DOUBLE_EQ(c.comm.heartbeat_timeout_s, 10.0);
  EXPECT_EQ(c.comm.watchdog_interface, "eth1");
  EXPECT_EQ(c.comm.watchdog_family, AddressFamily::kIpv6);
  EXPECT_EQ(c.placement.bind, PlacementBind::kCore);
  EXPECT_EQ(c.output.dir, "runs/full");
  EXPECT_EQ(c.output.checkpoint_every, 100);
  EXPECT_TRUE(c.output.sample_log);
  EXPECT_EQ(c.output.progress, ProgressChoice::kJson);
  EXPECT_DOUBLE_EQ(c.output.progress_interval_s, 2.5);
  const YAML::Node sim = YAML::Load(c.sim_yaml);
  EXPECT_EQ(sim["nodes"].as<int>(), 32);
  EXPECT_DOUBLE_EQ(sim["workload"]["alpha_s"].as<double>(), 0.004);
}

void expect_defaults(const Config& c) {
  const Config d;
  EXPECT_EQ(c.model, d.model);
  EXPECT_EQ(c.dataset.name, d.dataset.name);
  EXPECT_EQ(c.dataset.shape, d.dataset.shape);
  EXPECT_EQ(c.train.epochs, d.train.epochs);
  EXPECT_EQ(c.train.max_steps, d.train.max_steps);
  EXPECT_EQ(c.train.lr, d.train.lr);
  EXPECT_EQ(c.train.optimizer, d.train.optimizer);
  EXPECT_EQ(c.train.seed, d.train.seed);
  EXPECT_EQ(c.train.device, DeviceChoice::kAuto);
  EXPECT_EQ(c.train.precision, Precision::kFp32);
  EXPECT_FALSE(c.train.channels_last);
  EXPECT_FALSE(c.train.cudnn_benchmark);
  EXPECT_TRUE(c.train.keep_host_memory);
  EXPECT_TRUE(c.train.huge_pages);
  EXPECT_EQ(c.train.loss_scale, LossScaling::kAuto);
  EXPECT_DOUBLE_EQ(c.train.loss_scale_init, 65536);
  EXPECT_EQ(c.train.loss_scale_growth_interval, 2000);
  EXPECT_FALSE(c.train.target_accuracy.has_value());
  EXPECT_EQ(c.batch.init, d.batch.init);
  EXPECT_EQ(c.batch.min, d.batch.min);
  EXPECT_EQ(c.batch.max, d.batch.max);
  EXPECT_EQ(c.batch.global, d.batch.global);
  EXPECT_EQ(c.policy.name, d.policy.name);
  EXPECT_EQ(c.policy.window, d.policy.window);
  EXPECT_TRUE(c.hetero.slowdown.empty());
  EXPECT_TRUE(c.hetero.events.empty());
  EXPECT_EQ(c.monitor.ebpf, EbpfMode::kAuto);
  EXPECT_TRUE(c.monitor.enabled);
  EXPECT_EQ(c.backend, Backend::kAuto);
  EXPECT_EQ(c.comm.bucket_mb, d.comm.bucket_mb);
  EXPECT_EQ(c.output.dir, d.output.dir);
  EXPECT_FALSE(c.output.sample_log);
  EXPECT_EQ(c.output.progress, ProgressChoice::kAuto);
  EXPECT_DOUBLE_EQ(c.output.progress_interval_s, 10);
  EXPECT_TRUE(c.sim_yaml.empty());
}

TEST(ConfigParse, EmptyTextGivesDefaults) { expect_defaults(parse_config("", kOrigin)); }

TEST(ConfigParse, CommentsAndEmptySectionsGiveDefaults) {
  expect_defaults(parse_config("# nothing yet\ntrain:\nbatch:\nhetero:\nsim:\n", kOrigin));
}

TEST(ConfigParse, EveryKeyFromYaml) { expect_full(parse_config(kFullYaml, kOrigin)); }

TEST(ConfigParse, SourceReparsesToTheSameConfig) {
  const Config first = parse_config(kFullYaml, kOrigin);
  const Config second = parse_config(first.source, "saved");
  expect_full(second);
  EXPECT_EQ(second.source, first.source);
}

TEST(ConfigParse, SourceKeepsQuotedStrings) {
  const Config c = parse_config("model: '123'\ndataset: {vocab: \"true\"}\n", kOrigin);
  const Config again = parse_config(c.source, "saved");
  EXPECT_EQ(again.model, "123");
  EXPECT_EQ(again.dataset.vocab, "true");
  EXPECT_TRUE(YAML::Load(c.source)["model"].Tag() == "!");
}

TEST(ConfigParse, ScalarBatchInitAndIntegerForNumber) {
  const Config c = parse_config("batch: {init: 64}\ntrain: {lr: 1, epochs: 3}\n", kOrigin);
  EXPECT_EQ(c.batch.init, std::vector<int32_t>{64});
  EXPECT_DOUBLE_EQ(c.train.lr, 1.0);
  EXPECT_DOUBLE_EQ(c.train.epochs, 3.0);
}

TEST(ConfigParse, NullTargetAccuracyMeansNone) {
  EXPECT_FALSE(parse_config("train: {target_accuracy: null}", kOrigin).train.target_accuracy);
  EXPECT_FALSE(parse_config("train: {target_accuracy: ~}", kOrigin).train.target_accuracy);
}

// Each enumerated key's table: every spelling parses to a value that prints the same spelling
// (summary.json, checkpoints and logs write choice_name), and an unknown one lists the allowed.
template <class E>
void expect_round_trip(const std::string& allowed) {
  for (const std::string& name : choice_names<E>())
    EXPECT_EQ(choice_name(parse_choice<E>(name, "key")), name);
  EXPECT_EQ(testing::error_of([] { parse_choice<E>("bogus", "a.key"); }),
            "'a.key' must be one of " + allowed + ", got 'bogus'");
}

TEST(ConfigChoices, NamesRoundTrip) {
  expect_round_trip<Optimizer>("sgd|adamw");
  expect_round_trip<LrScaling>("linear|sqrt|none");
  expect_round_trip<DeviceChoice>("auto|cpu|cuda");
  expect_round_trip<Precision>("fp32|bf16|fp16");
  expect_round_trip<LossKind>("cross_entropy|mse|module");
  expect_round_trip<LossScaling>("auto|dynamic|none");
  expect_round_trip<GlobalBatch>("fixed|adaptive");
  expect_round_trip<EbpfMode>("auto|on|off");
  expect_round_trip<Compression>("none|fp16|bf16|hlc");
  expect_round_trip<Backend>("auto|nccl|mpi");
}

TEST(ConfigOverride, Scalar) {
  const Config c = parse_config("train: {lr: 0.5}\n", kOrigin, {"train.lr=0.1", "policy.name=gns"});
  EXPECT_DOUBLE_EQ(c.train.lr, 0.1);
  EXPECT_EQ(c.policy.name, "gns");
}

TEST(ConfigOverride, ListReplacesScalar) {
  const Config c = parse_config("batch: {init: 8}\n", kOrigin, {"batch.init=[16,32]"});
  EXPECT_EQ(c.batch.init, (std::vector<int32_t>{16, 32}));
}

TEST(ConfigOverride, OneRuleNameIsAListOfOne) {
  const Config c = parse_config("policy: {name: dynamix}\n", kOrigin, {"policy.rules_off=tracking"});
  EXPECT_EQ(c.policy.rules_off, std::vector<std::string>{"tracking"});
}

TEST(ConfigOverride, ReplayTakesAPath) {
  const Config c =
      parse_config("policy: {name: static}\n", kOrigin, {"policy.replay=runs/a/decisions.jsonl"});
  EXPECT_EQ(c.policy.replay, "runs/a/decisions.jsonl");
  EXPECT_TRUE(parse_config("", kOrigin).policy.replay.empty());
}

TEST(ConfigOverride, NullClearsTarget) {
  const Config c = parse_config("train: {target_accuracy: 0.9}\n", kOrigin, {"train.target_accuracy=null"});
  EXPECT_FALSE(c.train.target_accuracy.has_value());
}

TEST(ConfigOverride, NestedCreatesMissingSections) {
  const Config c = parse_config("", kOrigin, {"hetero.slowdown=[1, 2.5]", "sim.workload.b_noise=512"});
  EXPECT_EQ(c.hetero.slowdown, (std::vector<double>{1.0, 2.5}));
  EXPECT_EQ(YAML::Load(c.sim_yaml)["workload"]["b_noise"].as<int>(), 512);
}

// A per-rank key takes one entry for every rank, and a single number is that entry.
TEST(ConfigOverride, ASingleNumberIsThePerRankListsOneEntry) {
  const Config c = parse_config("hetero: {bandwidth_mbps: 200}\n", kOrigin, {"hetero.slowdown=2"});
  EXPECT_EQ(c.hetero.slowdown, (std::vector<double>{2.0}));
  EXPECT_EQ(c.hetero.bandwidth_mbps, (std::vector<double>{200.0}));
}

TEST(ConfigOverride, WholeSectionAndLastOneWins) {
  const Config c = parse_config("policy: {name: static, window: 3}\n", kOrigin,
                                {"policy={name: proportional, window: 5}", "policy.window=9"});
  EXPECT_EQ(c.policy.name, "proportional");
  EXPECT_EQ(c.policy.window, 9);
}

TEST(ConfigOverride, SpacesAroundKeyAndValue) {
  const Config c = parse_config("", kOrigin, {" train.lr = 0.25 "});
  EXPECT_DOUBLE_EQ(c.train.lr, 0.25);
}

TEST(ConfigOverride, SourceRecordsOverriddenValues) {
  const Config c = parse_config("train: {lr: 0.5}\n", kOrigin, {"train.lr=0.125", "batch.init=[16,32]"});
  const Config again = parse_config(c.source, "saved");
  EXPECT_DOUBLE_EQ(again.train.lr, 0.125);
  EXPECT_EQ(again.batch.init, (std::vector<int32_t>{16, 32}));
}

TEST(ConfigWorld, InitialBatchesExpandOrCopy) {
  const Config one = parse_config("batch: {init: 24}", kOrigin);
  EXPECT_EQ(initial_batches(one, 3), (std::vector<int32_t>{24, 24, 24}));
  const Config per_rank = parse_config("batch: {init: [8, 16]}", kOrigin);
  EXPECT_EQ(initial_batches(per_rank, 2), (std::vector<int32_t>{8, 16}));
  EXPECT_THROW(initial_batches(per_rank, 3), Error);
}

TEST(ConfigWorld, AcceptsOneOrWorldEntries) {
  const Config c = parse_config(
      "batch: {init: [8, 8, 8, 8]}\nhetero: {slowdown: [2], bandwidth_mbps: [0, 0, 0, 10],"
      " events: [{at_step: 1, rank: 3, slowdown: 2}]}",
      kOrigin);
  EXPECT_NO_THROW(validate_for_world(c, 4));
  EXPECT_NO_THROW(validate_for_world(parse_config("", kOrigin), 7));
}

void expect_world_error(const std::string& yaml, int world, const std::vector<std::string>& parts) {
  const Config c = parse_config(yaml, kOrigin);
  try {
    validate_for_world(c, world);
    ADD_FAILURE() << "no error for world " << world << ": " << yaml;
  } catch (const Error& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(ConfigWorld, ListLengthsMustMatch) {
  expect_world_error("batch: {init: [8, 8, 8]}", 4, {"'batch.init'", "3 entries", "4 ranks"});
  expect_world_error("hetero: {slowdown: [1, 2]}", 4, {"'hetero.slowdown'", "2 entries", "4 ranks"});
  expect_world_error("hetero: {bandwidth_mbps: [0, 0, 0]}", 2, {"'hetero.bandwidth_mbps'", "3 entries"});
  expect_world_error("hetero: {jitter: [0, 0.1, 0]}", 2, {"'hetero.jitter'", "3 entries"});
  expect_world_error("hetero: {step_overhead_ms: [0, 5, 0]}", 2, {"'hetero.step_overhead_ms'", "3 entries"});
}

TEST(ConfigWorld, EventRankMustExist) {
  expect_world_error("hetero: {events: [{at_step: 5, rank: 4, slowdown: 2}]}", 4,
                     {"'hetero.events[0].rank'", "4 ranks"});
}

}  // namespace
}  // namespace dynamix
