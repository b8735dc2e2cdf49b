// DYNAMIX — the simulator's `sim:` configuration block (contract in ../shared/DESIGN.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dynamix {

struct SimWorkload {
  double alpha_s = 0.004;         // fixed compute time per step at speed 1 (s)
  double beta_s = 0.0004;         // compute time per sample at speed 1 (s)
  double grad_bytes = 4.5e7;      // gradient size S allreduced per step (bytes)
  double bandwidth_gbps = 25;     // slowest link of the ring (Gbit/s)
  double latency_us = 20;         // per-message latency of the ring
  double b_noise = 256;           // gradient noise scale at the start of training
  double b_noise_growth = 4;      // B_noise multiplier reached at the end of training
  double target_progress = 5000;  // equivalent small-batch steps that end the run
  double noise = 0.05;            // relative std of each rank's compute time per step
  double grad_noise = 0.1;        // relative std of reported squared gradient norms
  // Extra compute of a rank's first step at a changed batch, as a share of that step (new tensor
  // shapes cost time on real devices; 0.3-1.0 on the README demo's CPU ranks, RESULTS §1).
  double switch_cost = 0;
};

// A change of compute speed: ranks run `slowdown` times slower from at_step on, for duration_steps
// steps (transient, multiplies) or, with duration 0, until a later permanent event (replaces).
// With period_steps > 0 the event is a drift (co-located load, thermal throttling): from at_step
// the ranks' speed moves smoothly from 1 to `slowdown` and back every period_steps steps (a raised
// cosine), for duration_steps steps or, with 0, to the end; drifts multiply like transients.
struct SimEvent {
  int64_t at_step = 0;
  std::vector<int32_t> ranks;
  double slowdown = 1;
  int64_t duration_steps = 0;
  int64_t period_steps = 0;
  bool drift() const { return period_steps > 0; }
  // The event's factor at step t (1 when inactive); permanent step changes are not factors.
  double factor_at(int64_t t) const;
};

struct SimConfig {
  int32_t nodes = 4;
  uint64_t seed = 11;
  std::string profile = "uniform";  // what built the node models (preset name, classes, random, fit:path)
  // Per node, resolved at parse time: compute time (alpha_s[i] + beta_s[i]·b) at slowdown 1.
  std::vector<double> alpha_s, beta_s;
  // Per node relative std of compute time per step (a class's `noise`); empty: workload.noise.
  std::vector<double> noise;
  std::vector<SimEvent> events;  // sorted by at_step
  SimWorkload workload;
  int64_t max_steps = 0;  // safety stop for runs that never reach the target (0 = none)
};

// Parses the `sim:` block: either the block's own mapping or a document with a top-level `sim:`
// key. Read with the run configuration's rules (framework/core/yaml_reader.h): unknown keys, wrong
// types and impossible values raise dynamix::Error naming the key path (prefixed by `origin`). Profiles: a
// preset name (`profile: hetero4` or {preset: ...}), {classes: [{count, speed, fixed_speed, noise}]}
// (fixed_speed: the speed of the per-step fixed cost alpha, default speed; noise optional),
// {random: {min_speed, max_speed}} or {fit: path/to/metrics.jsonl}.
SimConfig parse_sim_config(const std::string& yaml_text, const std::string& origin = "sim");

// Builds a config from preset speeds (no YAML): `preset` as in the `profile` key.
SimConfig preset_sim_config(const std::string& preset, int32_t nodes = 0);

// Preset names and what they mean, for --help texts.
std::vector<std::string> sim_preset_names();
// Relative speeds of a preset for `nodes` ranks (0 = the preset's own size). Throws on unknown
// names or a size the preset does not have.
std::vector<double> preset_speeds(const std::string& preset, int32_t nodes);

}  // namespace dynamix
