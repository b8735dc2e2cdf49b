// DYNAMIX — `dynamix agent pretrain`: train the dynamix policy in the simulator over random clusters.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "agent/ppo/dynamix_policy.h"
#include "agent/ppo/ppo_config.h"
#include "agent/sim/cluster_simulator.h"

namespace dynamix {

// Domain randomization (docs/AGENT.md, "Pretraining"): every episode draws a cluster and a
// workload from these ranges, so the policy never leans on one magnitude.
struct PretrainOptions {
  int64_t episodes = 2000;
  uint64_t seed = 1;                          // clusters, events and the policy's sampling
  int32_t min_nodes = 2, max_nodes = 1024;    // log-uniform cluster size
  double min_step_s = 1e-3, max_step_s = 10;  // compute time of a full-speed rank at the start
  double max_speed_ratio = 16;                // fastest / slowest rank
  double max_comm_share = 0.9;                // allreduce share of the step
  double max_noise = 0.4;                     // per-step relative compute noise (~0.2 per window)
  double homogeneous_probability = 0.15;      // clusters where nothing should move
  double memory_cap_probability = 0.3;        // some ranks get a small b_max
  double event_probability = 0.7;             // dynamic events: steps, transients, periods, waves
  double random_start_probability = 0.25;     // episodes that start from a random plan, not uniform
  int64_t windows_per_episode = 32;           // decisions per episode
  int32_t min_window = 4, max_window = 20;    // simulated steps per decision window
  int32_t batch_per_rank = 32;                // initial uniform b_i; B = nodes x this, kept fixed
  int32_t batch_max = 256;
  double max_change = 0.5;
  PpoConfig ppo;                     // background_update is forced off (the simulator can wait)
  std::string checkpoint;            // start from this policy (fine-tune); empty = from scratch
  std::string output;                // save the trained policy here; empty = do not save
  std::vector<std::string> exclude;  // episode kinds never drawn (held out to test fine-tuning)
  // Selection: the greedy policy is scored (mean throughput / balanced ideal) on the same
  // `validation_episodes` clusters, drawn from a stream of their own (kinds in `exclude` left
  // out), before training and every `validate_every` episodes; the best scoring weights are saved.
  // 0 = save the last weights.
  int64_t validate_every = 250;
  int64_t validation_episodes = 48;
  int64_t log_every = 50;       // episodes per progress line
  std::ostream* log = nullptr;  // progress; nullptr = std::cout
};

// One drawn episode: the cluster, its bounds and the decision window.
struct PretrainEpisode {
  SimConfig config;
  BatchBounds bounds;
  std::vector<int32_t> initial_plan;  // one value = every rank
  int64_t window = 5;
  std::string kind;  // homogeneous | static | step | transient | periodic | wave | drift | recover
};

// What one episode did: mean reward and throughput against the load-balanced ideal
// (ClusterSimulator::balanced_throughput at the same global batch), per window then averaged.
struct EpisodeResult {
  int64_t windows = 0;
  double mean_reward = 0;
  double mean_throughput = 0;    // samples/s
  double ideal_ratio = 0;        // mean over windows of throughput / ideal
  double final_ideal_ratio = 0;  // mean over the episode's last quarter of windows
};

// Runs one episode of `windows` decisions on `sim` (reset first) and closes it with end_episode.
EpisodeResult run_sim_episode(DynamixPolicy& policy, ClusterSimulator& sim, int64_t windows);

// Random episode `episode` (deterministic in options.seed and episode, the same on every machine).
PretrainEpisode random_episode(const PretrainOptions& options, int64_t episode);

// Trains, prints progress (episode, mean reward, throughput vs ideal), saves; returns an exit code.
// Throws dynamix::Error on bad options.
int run_pretrain(const PretrainOptions& options);

}  // namespace dynamix
