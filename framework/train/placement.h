// DYNAMIX — where a rank runs on its node (placement.bind: auto | none | numa | core): which GPU,
// and which cores. GPUs are spread over the NUMA nodes (two ranks on a two-socket, four-GPU node
// take one socket each), a rank is bound to the cores of its GPU's NUMA node, and without GPUs
// every rank of a node gets a disjoint share of its cores; LibTorch's intra-op threads follow the
// cores a rank got, or its share of its node's cores when several ranks are bound to one node
// (unless OMP_NUM_THREADS says otherwise). The topology comes from hwloc
// (hwloc_topology.h); the plan itself is a pure function of it, tested on synthetic machines.
#pragma once

#include <string>
#include <vector>

#include "framework/config/choices.h"

namespace dynamix {

struct Core {
  std::vector<int> pus;  // OS indices of its hardware threads
};

struct NumaNode {
  int os_index = 0;
  std::vector<Core> cores;
};

struct Gpu {
  std::string bus_id;  // PCI bus id, "0000:3b:00.0"
  int numa = -1;       // os_index of its nearest NUMA node; -1: unknown
};

struct Topology {
  std::vector<NumaNode> numa;
  std::vector<Gpu> gpus;  // the GPUs this process may use, in CUDA's order (index = CUDA device)
};

struct Placement {
  int gpu = -1;           // index into Topology::gpus; -1: none (CPU training)
  int numa = -1;          // os_index of the NUMA node of `cpus`; -1: none or several
  std::vector<int> cpus;  // PUs to bind to; empty: leave the binding as it is
  int threads = 0;        // intra-op threads: the cores in `cpus` (core), the node's cores over the
                          // ranks bound to it (numa); 0 when not bound
};

// The plan for node-local rank `local_rank` of `local_size`. `bind`: none | numa | core (auto is
// resolved by the caller); `use_gpus`: the rank trains on a GPU of topology.gpus. Every local rank
// computing its own plan from the same topology gets a consistent share: with `core`, the ranks
// bound to one NUMA node split its cores into disjoint contiguous blocks (shared round-robin only
// when there are more ranks than cores).
Placement plan_placement(const Topology& topology, int local_rank, int local_size, PlacementBind bind,
                         bool use_gpus);

// "0-3,8,10-11" for sorted or unsorted CPU indices; "" for none.
std::string cpu_list_text(std::vector<int> cpus);

// What placement.bind means for this process: `bind` unless it is auto, in which case "none" when
// the launcher has already bound the process (`current` covers fewer than `allowed` CPUs) or the
// node runs more ranks than it has CPUs (oversubscribed: pinning ranks to shared cores would take
// the scheduler's balancing away from them), else numa on a GPU and core without one.
PlacementBind resolve_bind(PlacementBind bind, bool use_gpus, size_t current, size_t allowed, int local_size);

}  // namespace dynamix
