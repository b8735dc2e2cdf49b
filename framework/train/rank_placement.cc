// DYNAMIX — placement at start-up.
#include "framework/train/rank_placement.h"

#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "framework/core/error.h"
#include "framework/core/host.h"
#include "framework/train/device.h"
#include "framework/train/hwloc_topology.h"

namespace dynamix {
namespace {

// The PCI bus ids of the GPUs this rank may train on, in CUDA's order (CUDA_VISIBLE_DEVICES
// already applied by CUDA); none when it trains on the CPU.
std::vector<std::string> visible_gpus(const Config& config) {
  const int devices = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  std::vector<std::string> ids;
  if (config.train.device == DeviceChoice::kCpu) return ids;
  for (int i = 0; i < devices; ++i)
    ids.push_back(device_bus_id(torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(i))));
  return ids;
}

// Fixed-size record of one rank for the table.
struct Row {
  char host[64];
  char gpu[32];
  char cpus[160];
  int32_t numa;
  int32_t threads;
  char bind[8];
};

template <size_t N>
void put(char (&dst)[N], const std::string& src) {
  std::snprintf(dst, N, "%s", src.c_str());
}

}  // namespace

RankPlacement place_this_rank(const Config& config, int local_rank, int local_size) {
  RankPlacement r;
  const std::vector<std::string> gpus = visible_gpus(config);
  const HwlocTopology hwloc;
  const Topology topology = hwloc.read(gpus);
  const std::vector<int> before = process_cpus();
  const size_t allowed = hwloc.allowed_cpus().size();
  r.bind = resolve_bind(config.placement.bind, !gpus.empty(), before.size(), allowed, local_size);
  if (config.placement.bind == PlacementBind::kAuto) {
    r.reason = before.size() < allowed
                   ? "auto: the launcher bound the process to CPUs " + cpu_list_text(before)
               : static_cast<size_t>(local_size) > allowed
                   ? "auto: " + std::to_string(local_size) + " ranks on " + std::to_string(allowed) +
                         " CPUs (oversubscribed): not bound"
                   : "auto: not bound by the launcher";
  }
  r.plan = plan_placement(topology, local_rank, local_size, r.bind, !gpus.empty());
  if (r.plan.gpu >= 0) r.gpu_bus_id = topology.gpus[static_cast<size_t>(r.plan.gpu)].bus_id;
  if (!r.plan.cpus.empty()) hwloc.bind_process(r.plan.cpus);
  r.cpus = process_cpus();

  if (std::getenv("OMP_NUM_THREADS") != nullptr) {
    r.threads = torch::get_num_threads();
  } else if (r.plan.threads > 0) {
    r.threads = r.plan.threads;
  } else {
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    r.threads = std::max(1, cores / std::max(1, local_size));
  }
  torch::set_num_threads(r.threads);
  return r;
}

std::vector<std::string> placement_lines(Communicator& comm, const RankPlacement& mine) {
  Row row{};
  put(row.host, host_name());
  put(row.gpu, mine.gpu_bus_id.empty() ? "-" : mine.gpu_bus_id);
  put(row.cpus, cpu_list_text(mine.cpus));
  put(row.bind, choice_name(mine.bind));
  row.numa = mine.plan.numa;
  row.threads = mine.threads;
  std::vector<Row> rows(static_cast<size_t>(comm.size()));
  comm.allgather(&row, sizeof(Row), rows.data());
  std::vector<std::string> lines;
  if (comm.rank() != 0) return lines;
  lines.push_back(std::string("placement: placement.bind ") + choice_name(mine.bind) +
                  (mine.reason.empty() ? "" : " (" + mine.reason + ")"));
  for (int q = 0; q < comm.size(); ++q) {
    const Row& x = rows[static_cast<size_t>(q)];
    const std::string numa = x.numa >= 0 ? std::to_string(x.numa) : "-";
    lines.push_back("placement: rank " + std::to_string(q) + " host " + x.host + " gpu " + x.gpu + " numa " +
                    numa + " cpus " + x.cpus + " threads " + std::to_string(x.threads) + " bind " + x.bind);
  }
  return lines;
}

}  // namespace dynamix
