// DYNAMIX — config errors: one case per class, each message must name the key and where it came from.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/config/config.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

struct ErrorCase {
  const char* name;
  const char* yaml;
  std::vector<std::string> overrides;
  std::vector<std::string> expect;  // substrings the message must contain
};

std::ostream& operator<<(std::ostream& os, const ErrorCase& c) { return os << c.name; }

class ConfigError : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ConfigError, MessageNamesKeyAndOrigin) {
  const ErrorCase& c = GetParam();
  try {
    parse_config(c.yaml, "configs/x.yaml", c.overrides);
    FAIL() << "no error for: " << c.yaml;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("configs/x.yaml", 0), 0u) << msg;
    for (const auto& part : c.expect)
      EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' not in: " << msg;
  }
}

const ErrorCase kCases[] = {
    // Unknown and duplicate keys, at every level; the allowed keys are listed.
    {"UnknownTopKey",
     "modle: cnn",
     {},
     {"unknown key 'modle'", "allowed at the top level", "model, dataset"}},
    {"UnknownNestedKey",
     "train: {lrr: 0.1}",
     {},
     {"configs/x.yaml: unknown key 'train.lrr'", "in 'train'", "lr,"}},
    {"UnknownEventKey",
     "hetero: {events: [{at_step: 1, rank: 0, slowdown: 2, foo: 1}]}",
     {},
     {"unknown key 'hetero.events[0].foo'", "at_step"}},
    {"DuplicateKey", "train: {lr: 0.1}\ntrain: {lr: 0.2}\n", {}, {"duplicate key 'train'"}},
    // Wrong types.
    {"StringForInt", "batch: {min: abc}", {}, {"configs/x.yaml: 'batch.min' must be an integer, got 'abc'"}},
    {"FloatForInt", "batch: {max: 1.5}", {}, {"'batch.max' must be an integer, got '1.5'"}},
    {"IntOutOfRange", "batch: {max: 3000000000}", {}, {"'batch.max' must fit in 32 bits"}},
    {"StringForNumber", "train: {lr: fast}", {}, {"'train.lr' must be a finite number, got 'fast'"}},
    {"QuotedNumber", "train: {lr: '0.1'}", {}, {"'train.lr' must be a number, got the string '0.1'"}},
    {"ControlCharacterInString",
     "model: \"cnn\\r\"",
     {},
     {"'model' must not contain control characters, got byte 0x0d at offset 3"}},
    {"ControlCharacterInOverride",
     "model: cnn",
     {"sim.profile=\"a\\tb\""},
     {"(override", "'sim.profile' must not contain control characters, got byte 0x09"}},
    {"NanNumber", "train: {lr: .nan}", {}, {"'train.lr' must be a finite number"}},
    {"NegativeSeed", "train: {seed: -1}", {}, {"'train.seed' must be a non-negative 64-bit integer"}},
    {"ScalarForList", "hetero: {slowdown: 2}", {}, {"'hetero.slowdown' must be a list, got '2'"}},
    {"ListForScalar", "model: [cnn]", {}, {"'model' must be a string, got a list"}},
    {"ScalarForSection", "train: 5", {}, {"'train' must be a mapping of keys, got '5'"}},
    {"NullForInt", "policy: {window: }", {}, {"'policy.window' must be an integer, got null"}},
    {"BoolYes", "dataset: {augment: yes}", {}, {"'dataset.augment' must be true or false, got 'yes'"}},
    {"BoolNumber", "policy: {learn: 1}", {}, {"'policy.learn' must be true or false, got '1'"}},
    {"TopLevelList", "- 1\n- 2\n", {}, {"top level must be a mapping"}},
    {"SimNotMapping", "sim: 3", {}, {"'sim' must be a mapping"}},
    {"EventNotMapping", "hetero: {events: [3]}", {}, {"'hetero.events[0]' must be a mapping"}},
    // YAML syntax: line and column from yaml-cpp.
    {"SyntaxError", "model: cnn\ntrain: {lr: 0.1}}\n", {}, {"configs/x.yaml:2:17: YAML syntax error"}},
    // Impossible values.
    {"EpochsZero", "train: {epochs: 0}", {}, {"'train.epochs' must be > 0"}},
    {"MaxStepsNegative", "train: {max_steps: -1}", {}, {"'train.max_steps' must be >= 0"}},
    {"LrZero", "train: {lr: 0}", {}, {"'train.lr' must be > 0, got '0'"}},
    {"MomentumOne", "train: {momentum: 1.0}", {}, {"'train.momentum' must be in [0, 1)"}},
    {"MomentumNegative", "train: {momentum: -0.1}", {}, {"'train.momentum' must be in [0, 1)"}},
    {"WeightDecayNegative", "train: {weight_decay: -1e-4}", {}, {"'train.weight_decay' must be >= 0"}},
    {"WarmupNegative", "train: {warmup_steps: -5}", {}, {"'train.warmup_steps' must be >= 0"}},
    {"TargetAboveOne", "train: {target_accuracy: 1.5}", {}, {"'train.target_accuracy' must be in [0, 1]"}},
    {"TargetNegative", "train: {target_accuracy: -0.1}", {}, {"'train.target_accuracy' must be in [0, 1]"}},
    {"EvalEveryNegative", "train: {eval_every: -1}", {}, {"'train.eval_every' must be >= 0"}},
    {"PrecisionFp8",
     "train: {precision: fp8}",
     {},
     {"'train.precision' must be one of fp32|bf16|fp16, got 'fp8'"}},
    {"DeviceTpu", "train: {device: tpu}", {}, {"'train.device' must be one of auto|cpu|cuda, got 'tpu'"}},
    {"LossScaleStatic",
     "train: {loss_scale: static}",
     {},
     {"'train.loss_scale' must be one of auto|dynamic|none"}},
    {"LossScaleInitBelowOne",
     "train: {loss_scale_init: 0.5}",
     {},
     {"'train.loss_scale_init' must be a finite number >= 1"}},
    {"LossScaleGrowthZero",
     "train: {loss_scale_growth_interval: 0}",
     {},
     {"'train.loss_scale_growth_interval' must be >= 1"}},
    {"ChannelsLastNotBool", "train: {channels_last: maybe}", {}, {"train.channels_last"}},
    {"Optimizer", "train: {optimizer: adam}", {}, {"'train.optimizer' must be one of sgd|adamw, got 'adam'"}},
    {"LrScaling", "train: {lr_scaling: cubic}", {}, {"'train.lr_scaling' must be one of linear|sqrt|none"}},
    {"NesterovWithoutMomentum",
     "train: {nesterov: true, momentum: 0}",
     {},
     {"'train.nesterov' needs 'train.momentum' > 0"}},
    {"BatchMinZero", "batch: {min: 0}", {}, {"'batch.min' must be >= 1"}},
    {"BatchMaxBelowMin",
     "batch: {init: 40, min: 64, max: 32}",
     {},
     {"'batch.min' (64) must not exceed 'batch.max' (32)"}},
    {"BatchInitAboveMax",
     "batch: {init: [8, 600], max: 512}",
     {},
     {"'batch.init[1]' (600) must be within ['batch.min', 'batch.max'] = [1, 512]"}},
    {"BatchInitBelowMin", "batch: {init: 4, min: 8}", {}, {"'batch.init' (4) must be within"}},
    {"BatchInitEmpty", "batch: {init: []}", {}, {"'batch.init' must be one integer or a non-empty list"}},
    {"BatchGlobal",
     "batch: {global: dynamic}",
     {},
     {"'batch.global' must be one of fixed|adaptive, got 'dynamic'"}},
    {"PolicyName",
     "policy: {name: ppo}",
     {},
     {"'policy.name' must be one of static|proportional|gns|dynamix"}},
    {"PolicyWindow", "policy: {window: 0}", {}, {"'policy.window' must be >= 1"}},
    {"HeteroSlowdownBelowOne",
     "hetero: {slowdown: [1, 0.5]}",
     {},
     {"'hetero.slowdown[1]' must be >= 1, got '0.5'"}},
    {"HeteroBandwidthNegative",
     "hetero: {bandwidth_mbps: [-1]}",
     {},
     {"'hetero.bandwidth_mbps[0]' must be >= 0"}},
    {"EventStepNegative",
     "hetero: {events: [{at_step: -1, rank: 0, slowdown: 2}]}",
     {},
     {"'hetero.events[0].at_step' must be >= 0"}},
    {"EventRankNegative",
     "hetero: {events: [{at_step: 1, rank: -1, slowdown: 2}]}",
     {},
     {"'hetero.events[0].rank' must be >= 0"}},
    {"EventSlowdownBelowOne",
     "hetero: {events: [{at_step: 1, rank: 0, slowdown: 0.5}]}",
     {},
     {"'hetero.events[0].slowdown' must be >= 1"}},
    {"EventWithoutEffect",
     "hetero: {events: [{at_step: 1, rank: 0, slowdown: 2}, {at_step: 5, rank: 1}]}",
     {},
     {"'hetero.events[1]' must set 'slowdown' or 'bandwidth_mbps'"}},
    {"MonitorEbpf", "monitor: {ebpf: maybe}", {}, {"'monitor.ebpf' must be one of auto|on|off"}},
    {"Backend", "backend: gloo", {}, {"'backend' must be one of auto|nccl|mpi, got 'gloo'"}},
    {"BucketZero", "comm: {bucket_mb: 0}", {}, {"'comm.bucket_mb' must be in (0, 4096]"}},
    {"BucketHuge", "comm: {bucket_mb: 5000}", {}, {"'comm.bucket_mb' must be in (0, 4096]"}},
    {"Compression",
     "comm: {compression: int8}",
     {},
     {"'comm.compression' must be one of none|fp16|bf16|hlc"}},
    {"HlcRatio", "comm: {hlc_ratio: 0.5}", {}, {"'comm.hlc_ratio' must be in [1, 16]"}},
    {"HlcFraction",
     "comm: {hlc_max_bytes_fraction: 0}",
     {},
     {"'comm.hlc_max_bytes_fraction' must be in (0, 1]"}},
    {"CollectiveTimeout", "comm: {timeout_s: 0.5}", {}, {"'comm.timeout_s' must be >= 1"}},
    {"HeartbeatTimeout", "comm: {heartbeat_timeout_s: 1}", {}, {"'comm.heartbeat_timeout_s' must be >= 2"}},
    {"WatchdogFamily", "comm: {watchdog_family: ipv5}", {}, {"comm.watchdog_family", "ipv5"}},
    {"WatchdogInterface",
     "comm: {watchdog_interface: 'eth 0'}",
     {},
     {"comm.watchdog_interface", "interface name"}},
    {"PlacementBind",
     "placement: {bind: socket}",
     {},
     {"'placement.bind' must be one of auto|none|numa|core"}},
    {"WatchdogNotBool", "comm: {watchdog: sometimes}", {}, {"'comm.watchdog'"}},
    {"OutputDirEmpty", "output: {dir: ''}", {}, {"'output.dir' must not be empty"}},
    {"CheckpointEveryNegative",
     "output: {checkpoint_every: -1}",
     {},
     {"'output.checkpoint_every' must be >= 0"}},
    {"Progress",
     "output: {progress: fancy}",
     {},
     {"'output.progress' must be one of auto|tty|lines|json|quiet, got 'fancy'"}},
    {"ProgressIntervalZero",
     "output: {progress_interval_s: 0}",
     {},
     {"'output.progress_interval_s' must be a finite number > 0"}},
    {"DatasetName",
     "dataset: {name: imagenet}",
     {},
     {"'dataset.name' must be one of fashion_mnist|mnist|cifar10"}},
    {"TrainSizeZero", "dataset: {train_size: 0}", {}, {"'dataset.train_size' must be >= 1"}},
    {"TestSizeZero", "dataset: {test_size: 0}", {}, {"'dataset.test_size' must be >= 1"}},
    {"ClassesZero", "dataset: {classes: 0}", {}, {"'dataset.classes' must be >= 1"}},
    {"SeqLenZero", "dataset: {seq_len: 0}", {}, {"'dataset.seq_len' must be >= 1"}},
    {"ShapeEntryZero", "dataset: {shape: [3, 0, 32]}", {}, {"'dataset.shape[1]' must be >= 1"}},
    {"ShapeTooManyDims",
     "dataset: {shape: [1, 2, 3, 4]}",
     {},
     {"'dataset.shape' must have 1 to 3 dimensions"}},
    {"ShapeEmpty", "dataset: {shape: []}", {}, {"'dataset.shape' must have 1 to 3 dimensions"}},
    {"ModelEmpty", "model: ''", {}, {"'model' must name a model"}},
    // Overrides: malformed, unknown key, bad value; the message names the override.
    {"OverrideNoEquals", "", {"train.lr"}, {"malformed override 'train.lr'"}},
    {"OverrideEmptyKey", "", {"=3"}, {"malformed override '=3'"}},
    {"OverrideEmptySegment", "", {"train..lr=1"}, {"malformed override 'train..lr=1'"}},
    {"OverrideUnknownKey",
     "train: {lr: 0.1}",
     {"train.lrr=0.1"},
     {"configs/x.yaml (override 'train.lrr=0.1'): unknown key 'train.lrr'"}},
    {"OverrideUnknownSection", "", {"trian.lr=0.1"}, {"unknown key 'trian'", "override 'trian.lr=0.1'"}},
    {"OverrideBadValue",
     "batch: {min: 2}",
     {"batch.min=abc"},
     {"(override 'batch.min=abc'): 'batch.min' must be an integer, got 'abc'"}},
    {"OverrideIntoValue",
     "model: cnn",
     {"model.name=cnn"},
     {"override 'model.name=cnn'", "'model' is a value"}},
    {"OverrideMakesSection",
     "",
     {"model.name=cnn"},
     {"(override 'model.name=cnn'): 'model' must be a string, got a mapping"}},
    {"OverrideSyntax", "", {"batch.init=[1,2"}, {"override 'batch.init=[1,2'", "YAML syntax error"}},
    {"OverrideMakesRelationFail",
     "batch: {min: 8, max: 64, init: 16}",
     {"batch.max=4"},
     {"(override 'batch.max=4')", "'batch.min' (8) must not exceed 'batch.max' (4)"}},
};

INSTANTIATE_TEST_SUITE_P(Cases, ConfigError, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<ErrorCase>& p) { return p.param.name; });

}  // namespace
}  // namespace dynamix
