// DYNAMIX — hwloc calls, each checked where it is made.
#include "framework/train/hwloc_topology.h"

#include <hwloc.h>
#include <sched.h>

#include <cerrno>
#include <cstring>

#include "framework/core/error.h"

namespace dynamix {
namespace {

std::vector<int> indices_of(hwloc_const_bitmap_t set) {
  std::vector<int> out;
  for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) out.push_back(i);
  return out;
}

}  // namespace

HwlocTopology::HwlocTopology() {
  if (hwloc_topology_init(&topology_) != 0) throw Error("placement: hwloc_topology_init failed");
  // PCI devices, to find each GPU's NUMA node; bridges and other devices are not needed.
  hwloc_topology_set_io_types_filter(topology_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(topology_) != 0) {
    const int e = errno;
    hwloc_topology_destroy(topology_);
    throw Error(std::string("placement: hwloc cannot read this node's topology: ") + std::strerror(e));
  }
}

HwlocTopology::~HwlocTopology() { hwloc_topology_destroy(topology_); }

Topology HwlocTopology::read(const std::vector<std::string>& gpu_bus_ids) const {
  Topology t;
  const int nodes = hwloc_get_nbobjs_by_type(topology_, HWLOC_OBJ_NUMANODE);
  const int cores = hwloc_get_nbobjs_by_type(topology_, HWLOC_OBJ_CORE);
  for (int n = 0; n < nodes; ++n) {
    hwloc_obj_t node = hwloc_get_obj_by_type(topology_, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(n));
    NumaNode numa;
    numa.os_index = static_cast<int>(node->os_index);
    for (int c = 0; c < cores; ++c) {
      hwloc_obj_t core = hwloc_get_obj_by_type(topology_, HWLOC_OBJ_CORE, static_cast<unsigned>(c));
      if (!hwloc_bitmap_isincluded(core->cpuset, node->cpuset)) continue;
      numa.cores.push_back(Core{indices_of(core->cpuset)});
    }
    if (cores == 0) {  // no core level reported: every PU counts as a core
      for (int pu : indices_of(node->cpuset)) numa.cores.push_back(Core{{pu}});
    }
    if (!numa.cores.empty()) t.numa.push_back(numa);
  }
  for (const auto& bus_id : gpu_bus_ids) {
    Gpu gpu{bus_id, -1};
    hwloc_obj_t pci = hwloc_get_pcidev_by_busidstring(topology_, bus_id.c_str());
    hwloc_obj_t near = pci ? hwloc_get_non_io_ancestor_obj(topology_, pci) : nullptr;
    if (near && near->nodeset && !hwloc_bitmap_iszero(near->nodeset) &&
        hwloc_bitmap_weight(near->nodeset) == 1) {
      gpu.numa = hwloc_bitmap_first(near->nodeset);
    }
    t.gpus.push_back(gpu);
  }
  return t;
}

std::vector<int> HwlocTopology::allowed_cpus() const {
  return indices_of(hwloc_topology_get_allowed_cpuset(topology_));
}

void HwlocTopology::bind_process(const std::vector<int>& cpus) const {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  for (int cpu : cpus) hwloc_bitmap_set(set, static_cast<unsigned>(cpu));
  const int rc = hwloc_set_cpubind(topology_, set, HWLOC_CPUBIND_PROCESS);
  const int e = errno;
  hwloc_bitmap_free(set);
  if (rc != 0) {
    throw Error("placement: cannot bind the process to CPUs " + cpu_list_text(cpus) + ": " +
                std::strerror(e) + " (placement.bind: none leaves the binding to the launcher)");
  }
}

std::vector<int> process_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    throw Error(std::string("placement: sched_getaffinity failed: ") + std::strerror(errno));
  }
  std::vector<int> cpus;
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (CPU_ISSET(i, &set)) cpus.push_back(i);
  }
  return cpus;
}

}  // namespace dynamix
