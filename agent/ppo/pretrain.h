// DYNAMIX — `dynamix agent pretrain`: train the dynamix policy in the simulator over random clusters.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "agent/ppo/dynamix_policy.h"
#include "agent/ppo/ppo_config.h"
#include "agent/sim/cluster_simulator.h"

namespace dynamix {

struct PretrainOptions {
  int64_t episodes = 300;
  uint64_t seed = 1;  // clusters, events and the policy's sampling
  int32_t min_nodes = 4, max_nodes = 64;
  double min_speed = 0.25, max_speed = 1.0;  // relative node speeds (log-uniform)
  double event_probability = 0.5;            // chance an episode has a slowdown event mid-way
  int64_t windows_per_episode = 32;          // decisions per episode
  int64_t window = 5;                        // simulated steps per decision window
  int32_t batch_per_rank = 32;               // initial uniform b_i; B = nodes x this, kept fixed
  int32_t batch_min = 1, batch_max = 256;
  double max_change = 0.5;
  PpoConfig ppo;                // background_update is forced off (the simulator can wait)
  std::string checkpoint;       // start from this policy (fine-tune); empty = from scratch
  std::string output;           // save the trained policy here; empty = do not save
  int64_t log_every = 10;       // episodes per progress line
  std::ostream* log = nullptr;  // progress; nullptr = std::cout
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

// Random cluster for pretraining episode `episode` (deterministic in options.seed and episode).
SimConfig random_cluster(const PretrainOptions& options, int64_t episode);

// Trains, prints progress (episode, mean reward, throughput vs ideal), saves; returns an exit code.
// Throws dynamix::Error on bad options.
int run_pretrain(const PretrainOptions& options);

}  // namespace dynamix
