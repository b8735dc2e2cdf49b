// DYNAMIX — PPO pretraining loop over randomised simulated clusters.
#include "agent/ppo/pretrain.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <random>

#include "agent/ppo/ppo_learner.h"
#include "framework/core/error.h"

namespace dynamix {

EpisodeResult run_sim_episode(DynamixPolicy& policy, ClusterSimulator& sim, int64_t windows) {
  EpisodeResult r;
  ClusterState state = sim.reset();
  const double global_batch = state.global.global_batch;
  std::vector<double> ratios;
  double reward_sum = 0, samples = 0, time = 0;
  for (int64_t w = 0; w < windows && !sim.done(); ++w) {
    BatchPlan plan = policy.decide(state);
    if (plan.has_reward) reward_sum += plan.reward;
    SimTotals before = sim.totals();
    state = sim.step_window(plan);
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

SimConfig random_cluster(const PretrainOptions& o, int64_t episode) {
  std::mt19937_64 rng(o.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(episode));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  auto log_uniform = [&](double lo, double hi) { return lo * std::pow(hi / lo, u(rng)); };
  SimConfig c;
  // Log-uniform size: small clusters are as common as large ones per doubling.
  c.nodes = static_cast<int32_t>(std::lround(log_uniform(o.min_nodes, o.max_nodes + 0.49)));
  c.nodes = std::clamp(c.nodes, o.min_nodes, o.max_nodes);
  c.seed = rng();
  c.profile = "pretrain-random";
  // A few speed classes, as real clusters mix a handful of device kinds.
  const int classes = 1 + static_cast<int>(u(rng) * 4);
  std::vector<double> class_speed(classes);
  for (double& s : class_speed) s = log_uniform(o.min_speed, o.max_speed);
  for (int32_t i = 0; i < c.nodes; ++i) {
    double speed = class_speed[rng() % classes];
    c.alpha_s.push_back(c.workload.alpha_s / speed);
    c.beta_s.push_back(c.workload.beta_s / speed);
  }
  c.workload.target_progress = 1e12;  // episodes end by window count, not by the target
  if (u(rng) < o.event_probability) {
    SimEvent e;
    e.at_step = static_cast<int64_t>(u(rng) * o.windows_per_episode * o.window);
    const int32_t hit = 1 + static_cast<int32_t>(u(rng) * std::max(1, c.nodes / 4));
    for (int32_t k = 0; k < hit; ++k) e.ranks.push_back(static_cast<int32_t>(rng() % c.nodes));
    e.slowdown = 1.5 + 2.5 * u(rng);
    e.duration_steps =
        u(rng) < 0.5 ? 0 : static_cast<int64_t>((0.2 + 0.5 * u(rng)) * o.windows_per_episode * o.window);
    c.events.push_back(e);
  }
  return c;
}

int run_pretrain(const PretrainOptions& o) {
  DYNAMIX_CHECK(o.episodes >= 1, "agent pretrain: episodes must be >= 1, got " + std::to_string(o.episodes));
  DYNAMIX_CHECK(o.min_nodes >= 1 && o.max_nodes >= o.min_nodes,
                "agent pretrain: need 1 <= min_nodes <= max_nodes, got " + std::to_string(o.min_nodes) +
                    ".." + std::to_string(o.max_nodes));
  DYNAMIX_CHECK(o.min_speed > 0 && o.max_speed >= o.min_speed,
                "agent pretrain: need 0 < min_speed <= max_speed");
  DYNAMIX_CHECK(o.windows_per_episode >= 1 && o.window >= 1,
                "agent pretrain: windows and window must be >= 1");
  DYNAMIX_CHECK(o.batch_per_rank >= o.batch_min && o.batch_per_rank <= o.batch_max,
                "agent pretrain: batch_per_rank must lie in [batch_min, batch_max]");
  std::ostream& out = o.log ? *o.log : std::cout;

  DynamixOptions po;
  po.ppo = o.ppo;
  po.ppo.seed = o.ppo.seed ^ o.seed;
  po.ppo.background_update = false;
  po.learn = true;
  po.checkpoint = o.checkpoint;
  po.log = nullptr;
  DynamixPolicy policy(po);
  out << "agent pretrain: " << o.episodes << " episodes x " << o.windows_per_episode << " windows of "
      << o.window << " steps, " << o.min_nodes << ".." << o.max_nodes << " nodes, seed " << o.seed
      << "\nppo config:\n"
      << to_string(policy.config()) << std::flush;

  const auto start = std::chrono::steady_clock::now();
  double sum_reward = 0, sum_ratio = 0, sum_final = 0;
  int64_t in_block = 0;
  for (int64_t ep = 0; ep < o.episodes; ++ep) {
    SimConfig cfg = random_cluster(o, ep);
    BatchBounds bounds;
    bounds.min = o.batch_min;
    bounds.max = {o.batch_max};
    bounds.fixed_global = true;
    bounds.global_batch = cfg.nodes * o.batch_per_rank;
    bounds.max_change = o.max_change;
    ClusterSimulator sim(cfg, bounds, {o.batch_per_rank}, o.window);
    EpisodeResult r = run_sim_episode(policy, sim, o.windows_per_episode);
    sum_reward += r.mean_reward;
    sum_ratio += r.ideal_ratio;
    sum_final += r.final_ideal_ratio;
    ++in_block;
    if (in_block == o.log_every || ep + 1 == o.episodes) {
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const auto flags = out.flags();
      const auto precision = out.precision();
      out << std::fixed << std::setprecision(3) << "episode " << ep + 1 << "/" << o.episodes
          << "  mean_reward " << sum_reward / in_block << "  throughput/ideal " << sum_ratio / in_block
          << " (end of episode " << sum_final / in_block << ")  updates " << policy.updates() << "  "
          << std::setprecision(1) << secs << " s\n"
          << std::flush;
      out.flags(flags);
      out.precision(precision);
      sum_reward = sum_ratio = sum_final = 0;
      in_block = 0;
    }
  }
  UpdateStats last = policy.last_update();
  out << "last update: " << last.to_string() << "\n";
  if (!o.output.empty()) {
    policy.save(o.output);
    out << "saved policy to " << o.output << "\n";
  }
  return 0;
}

}  // namespace dynamix
