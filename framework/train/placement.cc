// DYNAMIX — the placement plan (pure).
#include "framework/train/placement.h"

#include <algorithm>
#include <map>

namespace dynamix {
namespace {

// GPU indices interleaved over NUMA nodes (node order, then CUDA order within a node), so that
// consecutive local ranks land on different nodes.
std::vector<int> spread_gpus(const Topology& t) {
  std::map<int, std::vector<int>> by_node;
  for (size_t i = 0; i < t.gpus.size(); ++i) by_node[t.gpus[i].numa].push_back(static_cast<int>(i));
  std::vector<int> order;
  for (size_t round = 0; order.size() < t.gpus.size(); ++round) {
    for (const auto& [node, gpus] : by_node) {
      if (round < gpus.size()) order.push_back(gpus[round]);
    }
  }
  return order;
}

// Position in t.numa of the node with OS index `os_index`; -1 if none.
int node_position(const Topology& t, int os_index) {
  for (size_t i = 0; i < t.numa.size(); ++i) {
    if (t.numa[i].os_index == os_index) return static_cast<int>(i);
  }
  return -1;
}

// The NUMA node (position in t.numa) local rank q is bound to; -1: the whole machine.
int node_of(const Topology& t, const std::vector<int>& gpu_order, int q, bool use_gpus) {
  if (use_gpus) return node_position(t, t.gpus[static_cast<size_t>(gpu_order[q % gpu_order.size()])].numa);
  return t.numa.empty() ? -1 : q % static_cast<int>(t.numa.size());
}

std::vector<Core> cores_of(const Topology& t, int node) {
  if (node >= 0) return t.numa[static_cast<size_t>(node)].cores;
  std::vector<Core> all;
  for (const auto& n : t.numa) all.insert(all.end(), n.cores.begin(), n.cores.end());
  return all;
}

}  // namespace

Placement plan_placement(const Topology& t, int local_rank, int local_size, PlacementBind bind,
                         bool use_gpus) {
  Placement p;
  use_gpus = use_gpus && !t.gpus.empty();
  const std::vector<int> gpu_order = spread_gpus(t);
  if (use_gpus) p.gpu = gpu_order[static_cast<size_t>(local_rank) % gpu_order.size()];
  if (bind == PlacementBind::kNone) return p;

  const int node = node_of(t, gpu_order, local_rank, use_gpus);
  if (node < 0 && bind == PlacementBind::kNuma) return p;  // a GPU of unknown NUMA node: nothing to bind to
  std::vector<Core> cores = cores_of(t, node);
  if (cores.empty()) return p;
  // My position among the local ranks bound to the same node, and how many they are.
  int position = 0, sharing = 0;
  for (int q = 0; q < local_size; ++q) {
    if (node_of(t, gpu_order, q, use_gpus) != node) continue;
    if (q < local_rank) ++position;
    ++sharing;
  }
  // Ranks bound to one node (numa) share its cores: each gets its share as intra-op threads, so
  // several ranks on one GPU (MPS) or on one node's GPUs do not oversubscribe the node.
  const int node_cores = static_cast<int>(cores.size());
  p.threads = std::max(1, node_cores / std::max(1, sharing));
  if (bind == PlacementBind::kCore) {
    // My block of the node's cores.
    const size_t n = cores.size(), m = static_cast<size_t>(std::max(1, sharing)),
                 k = static_cast<size_t>(position);
    const size_t begin = m <= n ? k * n / m : k % n;
    const size_t end = m <= n ? (k + 1) * n / m : begin + 1;
    cores =
        std::vector<Core>(cores.begin() + static_cast<long>(begin), cores.begin() + static_cast<long>(end));
  }
  for (const auto& c : cores) p.cpus.insert(p.cpus.end(), c.pus.begin(), c.pus.end());
  std::sort(p.cpus.begin(), p.cpus.end());
  p.numa =
      node >= 0 ? t.numa[static_cast<size_t>(node)].os_index : (t.numa.size() == 1 ? t.numa[0].os_index : -1);
  if (bind == PlacementBind::kCore) p.threads = static_cast<int>(cores.size());
  return p;
}

std::string cpu_list_text(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string text;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    text += (text.empty() ? "" : ",") + std::to_string(cpus[i]);
    if (j > i) text += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return text;
}

PlacementBind resolve_bind(PlacementBind bind, bool use_gpus, size_t current, size_t allowed,
                           int local_size) {
  if (bind != PlacementBind::kAuto) return bind;
  if (current < allowed || static_cast<size_t>(std::max(local_size, 1)) > allowed)
    return PlacementBind::kNone;
  return use_gpus ? PlacementBind::kNuma : PlacementBind::kCore;
}

}  // namespace dynamix
