// DYNAMIX fuzz target — run configuration: YAML text and `--set` overrides through parse_config,
// the world-size checks, and the saved source read back. Input: the YAML text; every NUL byte
// starts one override ("key.sub=value").
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "framework/config/config.h"
#include "framework/core/error.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using dynamix::Config;

// Every field a run reads; Config has no operator== of its own.
std::string describe(const Config& c) {
  std::string s;
  auto add = [&](const auto& v) {
    if constexpr (std::is_floating_point_v<std::decay_t<decltype(v)>>) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%a,", v);  // exact, unlike to_string's six decimals
      s += buf;
    } else {
      s += std::to_string(v) + ",";
    }
  };
  auto add_list = [&](const auto& l) {
    s += "[";
    for (const auto& v : l) add(v);
    s += "]";
  };
  s += c.model + "|" + c.dataset.name + "|" + c.dataset.path + "|" + c.dataset.vocab + "|";
  add(c.dataset.augment), add(c.dataset.train_size), add(c.dataset.test_size), add_list(c.dataset.shape);
  add(c.dataset.classes), add(c.dataset.seq_len);
  const auto& t = c.train;
  add(t.epochs), add(t.max_steps), add(t.lr), add(t.momentum), add(t.nesterov), add(t.weight_decay);
  add(t.warmup_steps), add(t.target_accuracy.value_or(-1)), add(t.seed), add(t.eval_every);
  s += std::string(choice_name(t.optimizer)) + "|" + choice_name(t.lr_scaling) + "|";
  add_list(c.batch.init), add(c.batch.min), add(c.batch.max);
  s += std::string(choice_name(c.batch.global)) + "|" + c.policy.name + "|" + c.policy.checkpoint + "|";
  add(c.policy.window), add(c.policy.learn);
  add_list(c.hetero.slowdown), add_list(c.hetero.bandwidth_mbps), add_list(c.hetero.memory_mb);
  for (const auto& e : c.hetero.events) {
    add(e.at_step), add(e.rank), add(e.slowdown.value_or(-1)), add(e.bandwidth_mbps.value_or(-1));
  }
  s += std::string(choice_name(c.monitor.ebpf)) + "|" + choice_name(c.backend) + "|" +
       choice_name(c.comm.compression) + "|" + c.output.dir + "|";
  add(c.monitor.enabled), add(c.comm.bucket_mb), add(c.output.checkpoint_every);
  add(c.comm.watchdog), add(c.comm.timeout_s), add(c.comm.heartbeat_timeout_s);
  s += c.comm.watchdog_interface + "|" + choice_name(c.comm.watchdog_family) + "|" +
       choice_name(c.placement.bind) + "|";
  return s + c.sim_yaml;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t nul = input.find('\0', start);
    parts.push_back(input.substr(start, nul == std::string::npos ? std::string::npos : nul - start));
    if (nul == std::string::npos) break;
    start = nul + 1;
  }
  const std::vector<std::string> overrides(parts.begin() + 1, parts.end());

  Config config;
  try {
    config = dynamix::parse_config(parts[0], "fuzz.yaml", overrides);
  } catch (const dynamix::Error&) {
    return 0;  // rejected with a message: the expected outcome for most inputs
  }
  for (int world : {1, 2, 3, 64}) {
    try {
      dynamix::validate_for_world(config, world);
      if (dynamix::initial_batches(config, world).size() != static_cast<size_t>(world)) {
        dynamix::fuzz::fail("initial_batches returned the wrong number of ranks");
      }
    } catch (const dynamix::Error&) {
    }
  }
  // `source` is what a run saves as config.yaml: it must read back as the same configuration.
  Config again;
  try {
    again = dynamix::parse_config(config.source, "config.yaml");
  } catch (const dynamix::Error& e) {
    dynamix::fuzz::fail(std::string("saved source does not parse: ") + e.what() + "\n--- source:\n" +
                        config.source);
  }
  if (describe(again) != describe(config) || again.source != config.source) {
    dynamix::fuzz::fail("saved source reads back differently\n--- source:\n" + config.source +
                        "--- again:\n" + again.source);
  }
  return 0;
}
