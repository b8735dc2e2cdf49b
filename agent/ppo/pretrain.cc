// DYNAMIX — PPO pretraining loop over randomised simulated clusters.
#include "agent/ppo/pretrain.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <numeric>

#include "agent/plan_projection.h"
#include "agent/ppo/ppo_learner.h"
#include "framework/core/clock.h"
#include "framework/core/error.h"
#include "framework/core/file_io.h"
#include "framework/core/random.h"
#include "framework/core/strings.h"

namespace dynamix {

EpisodeResult run_sim_episode(DynamixPolicy& policy, ClusterSimulator& sim, int64_t windows) {
  EpisodeResult r;
  ClusterState state = sim.reset(&policy);
  const double global_batch = state.global.global_batch;
  std::vector<double> ratios;
  double reward_sum = 0, samples = 0, time = 0;
  for (int64_t w = 0; w < windows && !sim.done(); ++w) {
    BatchPlan plan = policy.decide(state);
    if (plan.has_reward) reward_sum += plan.reward;
    SimTotals before = sim.totals();
    state = sim.step_window(plan, &policy);
    SimTotals after = sim.totals();
    double dt = after.sim_time_s - before.sim_time_s, ds = after.samples - before.samples;
    if (dt > 0) {
      ratios.push_back(ds / dt / sim.balanced_throughput(global_batch));
      samples += ds;
      time += dt;
    }
    ++r.windows;
  }
  reward_sum += policy.end_episode(state);
  r.mean_reward = r.windows ? reward_sum / r.windows : 0;
  r.mean_throughput = time > 0 ? samples / time : 0;
  if (!ratios.empty()) {
    for (double x : ratios) r.ideal_ratio += x / ratios.size();
    size_t tail = std::max<size_t>(1, ratios.size() / 4);
    for (size_t k = ratios.size() - tail; k < ratios.size(); ++k) r.final_ideal_ratio += ratios[k] / tail;
  }
  return r;
}

namespace {

struct Draw {
  Rng rng;
  double uniform(double lo, double hi) { return lo + (hi - lo) * rng.uniform(); }
  double log_uniform(double lo, double hi) { return lo * std::pow(hi / lo, rng.uniform()); }
  int32_t below(int32_t n) {
    return static_cast<int32_t>(rng.next() % static_cast<uint64_t>(std::max(1, n)));
  }
  bool chance(double p) { return rng.uniform() < p; }
  std::vector<int32_t> ranks(int32_t nodes, int32_t count) {
    std::vector<int32_t> all(static_cast<size_t>(nodes));
    std::iota(all.begin(), all.end(), 0);
    for (int32_t k = 0; k < count && k < nodes; ++k)
      std::swap(all[size_t(k)], all[size_t(k + below(nodes - k))]);
    all.resize(static_cast<size_t>(std::min(count, nodes)));
    return all;
  }
};

// Relative speeds: one class (homogeneous), a few device kinds, or a continuum.
std::vector<double> draw_speeds(Draw& d, int32_t nodes, double max_ratio, bool homogeneous) {
  std::vector<double> speed(static_cast<size_t>(nodes), 1.0);
  if (homogeneous) return speed;
  const double ratio = d.log_uniform(1.2, max_ratio);
  if (d.chance(0.6)) {
    const int classes = 2 + d.below(3);
    std::vector<double> class_speed(static_cast<size_t>(classes));
    for (double& s : class_speed) s = d.log_uniform(1 / ratio, 1.0);
    class_speed[0] = 1.0, class_speed[1] = 1 / ratio;  // the full ratio is present
    for (double& s : speed) s = class_speed[size_t(d.below(classes))];
  } else {
    for (double& s : speed) s = d.log_uniform(1 / ratio, 1.0);
  }
  return speed;
}

// Every kind random_episode draws (PretrainEpisode::kind): no events, then draw_events' six.
constexpr const char* kEpisodeKinds[] = {"homogeneous", "static", "step",    "transient",
                                         "periodic",    "wave",   "recover", "drift"};

// Dynamic heterogeneity over an episode of `steps` steps; returns its kind.
std::string draw_events(Draw& d, SimConfig& c, int64_t steps, int64_t window) {
  const int32_t n = c.nodes;
  auto group = [&] { return d.ranks(n, 1 + d.below(std::max(1, n / (d.chance(0.3) ? 2 : 8)))); };
  auto event = [&](int64_t at, std::vector<int32_t> ranks, double slowdown, int64_t duration,
                   int64_t period = 0) {
    c.events.push_back({at, std::move(ranks), slowdown, duration, period});
  };
  const double slowdown = d.log_uniform(1.3, 6.0);
  const int64_t at = static_cast<int64_t>(d.uniform(0.1, 0.6) * steps);
  std::string kind;
  switch (d.below(6)) {
    case 0:
      kind = "step";
      event(at, group(), slowdown, 0);
      break;
    case 1:
      kind = "transient";
      event(at, group(), slowdown, std::max<int64_t>(1, static_cast<int64_t>(d.uniform(0.05, 0.4) * steps)));
      break;
    case 2: {
      kind = "periodic";
      const int64_t period = window * (2 + d.below(7)), on = std::max<int64_t>(1, period / 2);
      const std::vector<int32_t> ranks = group();
      for (int64_t t = at; t < steps; t += period) event(t, ranks, slowdown, on);
      break;
    }
    case 3: {
      kind = "wave";
      const int64_t span = std::max<int64_t>(1, window * (1 + d.below(4)));
      for (int64_t t = at; t < steps; t += span) event(t, group(), slowdown, span);
      break;
    }
    case 4: {
      kind = "drift";  // speeds that move smoothly, in 2-4 groups a fraction of a cycle apart
      const int64_t period = window * (4 + d.below(17));
      const int32_t groups = 2 + d.below(3);
      const std::vector<int32_t> ranks = d.chance(0.5) ? d.ranks(n, n) : group();
      for (int32_t g = 0; g < groups; ++g) {
        std::vector<int32_t> members;
        for (size_t k = size_t(g); k < ranks.size(); k += size_t(groups)) members.push_back(ranks[k]);
        if (members.empty()) continue;
        event(at + period * g / groups, std::move(members), slowdown, 0, period);
      }
      break;
    }
    default: {
      kind = "recover";
      const std::vector<int32_t> ranks = group();
      const int64_t end = at + std::max<int64_t>(window, static_cast<int64_t>(d.uniform(0.1, 0.3) * steps));
      event(at, ranks, slowdown, 0);
      event(end, ranks, 1.0, 0);
      event(end, group(), d.log_uniform(1.3, 6.0), 0);  // then another rank slows
      break;
    }
  }
  std::stable_sort(c.events.begin(), c.events.end(),
                   [](const SimEvent& a, const SimEvent& b) { return a.at_step < b.at_step; });
  return kind;
}

// A feasible plan of nodes x batch_per_rank samples, each rank's share drawn up to 8x apart: the
// policy must reach the balanced plan from wherever a run (or a resumed checkpoint) starts, and
// episodes that all start uniform never show it a plan far from balance in the other direction.
std::vector<int32_t> random_plan(Draw& d, BatchBounds bounds, int32_t nodes, int32_t batch_per_rank) {
  std::vector<double> desired(static_cast<size_t>(nodes));
  for (double& b : desired) b = batch_per_rank * d.log_uniform(0.35, 2.8);
  bounds.max_change = 0;
  return project_plan(desired, std::vector<int32_t>(desired.size(), batch_per_rank), bounds).batch_sizes;
}

}  // namespace

PretrainEpisode random_episode(const PretrainOptions& o, int64_t episode) {
  Draw d{Rng(o.seed * kGoldenGamma + static_cast<uint64_t>(episode))};
  PretrainEpisode ep;
  SimConfig& c = ep.config;
  c.nodes = std::clamp(static_cast<int32_t>(std::lround(d.log_uniform(o.min_nodes, o.max_nodes + 0.49))),
                       o.min_nodes, o.max_nodes);
  c.seed = d.rng.next();
  c.profile = "pretrain-random";
  ep.window = o.min_window + d.below(o.max_window - o.min_window + 1);

  // Compute: a full-speed rank's step time at the starting batch, and its fixed share.
  const double step = d.log_uniform(o.min_step_s, o.max_step_s), fixed = d.uniform(0, 0.6);
  const bool homogeneous = d.chance(o.homogeneous_probability);
  for (double speed : draw_speeds(d, c.nodes, o.max_speed_ratio, homogeneous)) {
    c.alpha_s.push_back(fixed * step / speed);
    c.beta_s.push_back((1 - fixed) * step / o.batch_per_rank / speed);
  }
  // Communication: a share of the mean step, as ring bytes over the bandwidth.
  SimWorkload& w = c.workload;
  double mean_compute = 0;
  for (int32_t i = 0; i < c.nodes; ++i)
    mean_compute += (c.alpha_s[size_t(i)] + c.beta_s[size_t(i)] * o.batch_per_rank) / c.nodes;
  const double share = d.uniform(0.001, o.max_comm_share);
  const double comm_s = share / (1 - share) * mean_compute, n = c.nodes;
  w.latency_us = 0;
  w.grad_bytes = 1e8;
  w.bandwidth_gbps = c.nodes > 1 ? 2 * (n - 1) / n * w.grad_bytes * 8 / 1e9 / comm_s : 1;
  w.noise = d.uniform(0, o.max_noise);
  w.target_progress = 1e18;  // episodes end by window count, not by the target

  ep.bounds.min = 1 + d.below(8);
  ep.bounds.fixed_global = true;
  ep.bounds.global_batch = c.nodes * o.batch_per_rank;
  ep.bounds.max_change = o.max_change;
  ep.bounds.max = {o.batch_max};
  if (d.chance(o.memory_cap_probability)) {  // memory caps: some ranks hold little more than they start with
    ep.bounds.max.assign(static_cast<size_t>(c.nodes), o.batch_max);
    for (auto& m : ep.bounds.max) {
      if (d.chance(0.5)) m = static_cast<int32_t>(o.batch_per_rank * d.log_uniform(1.0, 4.0));
    }
  }
  ep.kind = homogeneous ? "homogeneous" : "static";
  if (d.chance(o.event_probability))
    ep.kind = draw_events(d, c, o.windows_per_episode * ep.window, ep.window);
  ep.initial_plan = {o.batch_per_rank};
  if (d.chance(o.random_start_probability))
    ep.initial_plan = random_plan(d, ep.bounds, c.nodes, o.batch_per_rank);
  return ep;
}

namespace {
bool excluded(const PretrainOptions& o, const std::string& kind) {
  return std::find(o.exclude.begin(), o.exclude.end(), kind) != o.exclude.end();
}

// The validation clusters' stream: fixed, whatever the training seed, and apart from every
// training stream (those start at seed · kGoldenGamma).
constexpr uint64_t kValidationSeed = 0x76a11da7e5eedULL;

// The next episode of a stream, skipping excluded kinds; `drawn` counts the stream's draws.
PretrainEpisode next_episode(const PretrainOptions& o, int64_t& drawn) {
  PretrainEpisode draw = random_episode(o, drawn++);
  while (excluded(o, draw.kind)) draw = random_episode(o, drawn++);
  return draw;
}

// Mean throughput / balanced ideal of the greedy policy over the validation clusters. Inference
// only: no sampling, no normaliser update, no transition stored; the learner is left as it was.
double validation_score(DynamixPolicy& policy, const PretrainOptions& o) {
  PretrainOptions v = o;
  v.seed = kValidationSeed;
  policy.set_learning(false);
  double sum = 0;
  int64_t drawn = 0;
  for (int64_t k = 0; k < o.validation_episodes; ++k) {
    const PretrainEpisode draw = next_episode(v, drawn);
    ClusterSimulator sim(draw.config, draw.bounds, draw.initial_plan, draw.window);
    sum += run_sim_episode(policy, sim, o.windows_per_episode).ideal_ratio;
  }
  policy.set_learning(true);
  return sum / double(o.validation_episodes);
}

// The best validated weights so far (DynamixPolicy::save_state) and their score.
struct BestPolicy {
  std::string state;
  double score = -1;
  int64_t episode = 0;
};

// A later snapshot replaces the kept one only if it scores more than this much higher: trained
// snapshots score within 0.0005 of the untrained prior (seed 1: 0.8605-0.8639 against 0.8639),
// and differences that small change with a CPU's kernels (AVX2 against AVX-512, OpenBLAS core
// types) and would make the rebuilt policy file depend on the machine.
constexpr double kValidationMargin = 0.002;

void validate(DynamixPolicy& policy, const PretrainOptions& o, int64_t episode, BestPolicy& best,
              std::ostream& out) {
  const double score = validation_score(policy, o);
  const bool better = score > best.score + kValidationMargin;  // the first scoring always: best.score is -1
  if (better) best = {policy.save_state(), score, episode};
  out << "validation after episode " << episode << ": throughput/ideal " << format_number("%.4f", score)
      << (better ? " (best so far)" : "") << "\n"
      << std::flush;
}
}  // namespace

int run_pretrain(const PretrainOptions& o) {
  DYNAMIX_CHECK(o.episodes >= 1, "agent pretrain: episodes must be >= 1, got " + std::to_string(o.episodes));
  DYNAMIX_CHECK(o.min_nodes >= 1 && o.max_nodes >= o.min_nodes,
                "agent pretrain: need 1 <= min_nodes <= max_nodes, got " + std::to_string(o.min_nodes) +
                    ".." + std::to_string(o.max_nodes));
  DYNAMIX_CHECK(o.min_step_s > 0 && o.max_step_s >= o.min_step_s,
                "agent pretrain: need 0 < min_step_s <= max_step_s");
  DYNAMIX_CHECK(o.max_speed_ratio >= 1.2, "agent pretrain: max_speed_ratio must be >= 1.2");
  DYNAMIX_CHECK(o.max_comm_share >= 0.001 && o.max_comm_share < 1,
                "agent pretrain: max_comm_share in [0.001, 1)");
  DYNAMIX_CHECK(o.windows_per_episode >= 1 && o.min_window >= 1 && o.max_window >= o.min_window,
                "agent pretrain: windows and window sizes must be >= 1");
  DYNAMIX_CHECK(o.batch_per_rank >= 8 && o.batch_per_rank <= o.batch_max,
                "agent pretrain: batch_per_rank must lie in [8, batch_max]");
  std::string known;
  for (const char* k : kEpisodeKinds) known += (known.empty() ? "" : ", ") + std::string(k);
  for (const auto& k : o.exclude) {
    DYNAMIX_CHECK(std::find(std::begin(kEpisodeKinds), std::end(kEpisodeKinds), k) != std::end(kEpisodeKinds),
                  "agent pretrain: --exclude '" + k + "' is not an episode kind (" + known + ")");
  }
  DYNAMIX_CHECK(o.validate_every >= 0 && (o.validate_every == 0 || o.validation_episodes >= 1),
                "agent pretrain: validate_every must be >= 0 and validation_episodes >= 1");
  DYNAMIX_CHECK(o.exclude.size() < std::size(kEpisodeKinds),
                "agent pretrain: --exclude leaves no episode kind");
  if (!o.output.empty()) check_file_creatable(o.output, "agent pretrain: --output");  // before training
  std::ostream& out = o.log ? *o.log : std::cout;
  // One intra-op thread: the same seed rebuilds the same policy file bit for bit (the small
  // network gains nothing from more threads, and reductions split over threads may reorder sums).
  torch::set_num_threads(1);

  DynamixOptions po;
  po.ppo = o.ppo;
  po.ppo.seed = o.ppo.seed ^ o.seed;
  po.ppo.background_update = false;
  po.learn = true;
  po.checkpoint = o.checkpoint;
  po.log = nullptr;
  DynamixPolicy policy(po);
  out << "agent pretrain: " << o.episodes << " episodes x " << o.windows_per_episode << " windows of "
      << o.min_window << ".." << o.max_window << " steps, " << o.min_nodes << ".." << o.max_nodes
      << " nodes, seed " << o.seed << "\nppo config:\n"
      << to_string(policy.config()) << std::flush;

  const auto start = std::chrono::steady_clock::now();
  double sum_reward = 0, sum_ratio = 0, sum_final = 0;
  int64_t in_block = 0;
  int64_t drawn = 0;  // episode index of the random stream; excluded kinds are skipped
  BestPolicy best;
  if (o.validate_every > 0) validate(policy, o, 0, best, out);
  for (int64_t ep = 0; ep < o.episodes; ++ep) {
    const PretrainEpisode draw = next_episode(o, drawn);
    ClusterSimulator sim(draw.config, draw.bounds, draw.initial_plan, draw.window);
    EpisodeResult r = run_sim_episode(policy, sim, o.windows_per_episode);
    sum_reward += r.mean_reward;
    sum_ratio += r.ideal_ratio;
    sum_final += r.final_ideal_ratio;
    ++in_block;
    if (in_block == o.log_every || ep + 1 == o.episodes) {
      double secs = seconds_since(start);
      out << "episode " << ep + 1 << "/" << o.episodes << "  mean_reward "
          << format_number("%.3f", sum_reward / in_block) << "  throughput/ideal "
          << format_number("%.3f", sum_ratio / in_block) << " (end of episode "
          << format_number("%.3f", sum_final / in_block) << ")  updates " << policy.updates() << "  "
          << format_number("%.1f", secs) << " s\n"
          << std::flush;
      sum_reward = sum_ratio = sum_final = 0;
      in_block = 0;
    }
    if (o.validate_every > 0 && ((ep + 1) % o.validate_every == 0 || ep + 1 == o.episodes))
      validate(policy, o, ep + 1, best, out);
  }
  UpdateStats last = policy.last_update();
  out << "last update: " << last.to_string() << "\n";
  if (o.validate_every > 0) {
    policy.load_state(best.state);
    out << "keeping the weights validated after episode " << best.episode << " (throughput/ideal "
        << best.score << ")\n";
  }
  if (!o.output.empty()) {
    policy.save(o.output);
    out << "saved policy to " << o.output << "\n";
  }
  return 0;
}

}  // namespace dynamix
