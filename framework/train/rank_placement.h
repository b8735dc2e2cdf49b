// DYNAMIX — placement.bind applied to this rank at start-up (placement.h plans, hwloc binds), and
// rank 0's table of where every rank ended up.
#pragma once

#include <string>
#include <vector>

#include "framework/comm/communicator.h"
#include "framework/config/config.h"
#include "framework/train/placement.h"

namespace dynamix {

struct RankPlacement {
  PlacementBind bind = PlacementBind::kNone;  // what placement.bind resolved to here: none | numa | core
  std::string reason;                         // why, for auto ("the launcher bound it")
  Placement plan;          // gpu: the CUDA device to train on (-1: CPU, or local rank % GPUs)
  std::string gpu_bus_id;  // "" without a GPU
  std::vector<int> cpus;   // the CPUs the process is bound to after placement (sched_getaffinity)
  int threads = 0;         // LibTorch intra-op threads set
};

// Chooses this rank's GPU (when it trains on one) and binds the process per placement.bind, then
// sets LibTorch's intra-op threads to the cores it got (unless OMP_NUM_THREADS is set; unbound:
// the node's cores shared among its ranks). Local: no collective. Throws dynamix::Error.
RankPlacement place_this_rank(const Config& config, int local_rank, int local_size);

// Collective: rank 0 gets the lines to print, the binding mode and one per rank (host, GPU, NUMA
// node, CPUs, threads); the other ranks get none.
std::vector<std::string> placement_lines(Communicator& comm, const RankPlacement& mine);

}  // namespace dynamix
