// DYNAMIX — the one wrapper of hwloc (Debian's libhwloc-dev): this node's NUMA nodes with their
// cores, the NUMA node nearest each GPU (from the PCI tree), and binding the whole process.
#pragma once

#include <string>
#include <vector>

#include "framework/train/placement.h"

struct hwloc_topology;

namespace dynamix {

class HwlocTopology {
 public:
  // Discovers the node (PCI devices included). Throws dynamix::Error if hwloc cannot.
  HwlocTopology();
  ~HwlocTopology();
  HwlocTopology(const HwlocTopology&) = delete;
  HwlocTopology& operator=(const HwlocTopology&) = delete;

  // NUMA nodes with the cores this process may use, and the GPUs with these PCI bus ids (CUDA's
  // order kept; numa -1 for a bus id hwloc does not know, e.g. "cuda:0" from a build without the
  // CUDA toolkit).
  Topology read(const std::vector<std::string>& gpu_bus_ids) const;
  // The CPUs this process may use at all (its cgroup's, the container's).
  std::vector<int> allowed_cpus() const;
  // Binds every thread of the process to `cpus`. Throws dynamix::Error naming them.
  void bind_process(const std::vector<int>& cpus) const;

 private:
  hwloc_topology* topology_ = nullptr;
};

// The CPUs this process is bound to now (sched_getaffinity).
std::vector<int> process_cpus();

}  // namespace dynamix
