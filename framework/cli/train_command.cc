// DYNAMIX — `dynamix train`.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/cli/commands.h"
#include "framework/cli/make_communicator.h"
#include "framework/comm/mpi_communicator.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/comm/watchdog.h"
#include "framework/core/error.h"
#include "framework/train/device.h"
#include "framework/train/rank_placement.h"
#include "framework/train/trainer.h"

namespace dynamix {
namespace {

// Agrees across ranks on whether a set-up phase failed. Failing ranks print their error (rank 0
// alone when every rank failed the same way, to avoid N copies). Returns true if all succeeded.
bool all_ok(Communicator& comm, const std::string& error) {
  const int mine = error.empty() ? 0 : 1;
  std::vector<int> flags(static_cast<size_t>(comm.size()));
  comm.allgather(&mine, sizeof(int), flags.data());
  bool ok = true;
  for (int f : flags) ok = ok && f == 0;
  if (mine && (comm.rank() == 0 || flags[0] == 0)) {
    if (comm.size() > 1 && comm.rank() != 0) {
      std::fprintf(stderr, "dynamix: error on rank %d: %s\n", comm.rank(), error.c_str());
    } else {
      std::fprintf(stderr, "dynamix: error: %s\n", error.c_str());
    }
  }
  return ok;
}

// The watchdog's network: comm.watchdog_interface / comm.watchdog_family, unless the environment
// sets DYNAMIX_SOCKET_IFNAME / DYNAMIX_SOCKET_FAMILY (as NCCL_SOCKET_IFNAME: a cluster's launch
// script fixes the network once, for every config).
void watchdog_network(const CommConfig& comm, WatchdogOptions* w) {
  w->interface = comm.watchdog_interface;
  w->family = choice_name(comm.watchdog_family);  // a name: the environment may override it
  const char* ifname = std::getenv("DYNAMIX_SOCKET_IFNAME");
  if (ifname && *ifname) {
    w->interface = ifname;
    w->interface_key = "DYNAMIX_SOCKET_IFNAME";
  }
  const char* family = std::getenv("DYNAMIX_SOCKET_FAMILY");
  if (family && *family) {
    w->family = family;
    w->family_key = "DYNAMIX_SOCKET_FAMILY";
  }
}

}  // namespace

int launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return 0;
}

std::string brief_error(const std::exception& e) {
  if (const auto* ce = dynamic_cast<const c10::Error*>(&e)) return ce->what_without_backtrace();
  return e.what();
}

int run_train(const TrainCommand& cmd, int* argc, char*** argv) {
  MpiRuntime runtime(argc, argv);
  MpiCommunicator comm;
  Config config;
  std::string error;
  try {
    std::vector<std::string> overrides = cmd.overrides;
    if (!cmd.progress.empty()) overrides.push_back("output.progress=" + cmd.progress);
    config = load_config(cmd.config, overrides);
  } catch (const std::exception& e) {
    error = brief_error(e);
  }
  if (!all_ok(comm, error)) return 2;

  // Placement (placement.bind): this rank's GPU, its cores, LibTorch's threads.
  RankPlacement placement;
  try {
    placement = place_this_rank(config, runtime.local_rank(), runtime.local_size());
  } catch (const std::exception& e) {
    error = brief_error(e);
  }
  if (!all_ok(comm, error)) return 2;
  std::vector<std::string> startup_lines = placement_lines(comm, placement);
  const int gpu = placement.plan.gpu >= 0 ? placement.plan.gpu : runtime.local_rank();

  // Device and backend (train.device, backend): GPUs with NCCL when no two ranks share one.
  torch::Device device = torch::kCPU;
  try {
    device = choose_device(config, gpu);
  } catch (const std::exception& e) {
    error = brief_error(e);
  }
  if (!all_ok(comm, error)) return 2;
  const bool shared = ranks_share_a_gpu(comm, device);
  Backend backend = Backend::kMpi;
  try {
    backend = choose_backend(config, device, shared);
  } catch (const std::exception& e) {
    error = brief_error(e);
  }
  if (!all_ok(comm, error)) return 2;
  std::unique_ptr<Communicator> device_comm;  // NCCL for backend nccl; MPI (`comm`) otherwise
  try {
    device_comm = make_device_communicator(backend, static_cast<int>(device.index()));  // collective
  } catch (const std::exception& e) {
    error = brief_error(e);
  }
  if (!all_ok(comm, error)) return 2;
  Communicator& transport = device_comm ? *device_comm : comm;
  // A failed set-up may leave device collectives queued that peers never join: tear them down
  // (NCCL's destroy would wait for them) before returning.
  auto failed = [&device_comm] {
    if (device_comm) device_comm->abort();
    return 2;
  };

  // From here every collective is bounded and a lost rank ends the job (comm.watchdog). NCCL
  // collectives return before they finish, so its asynchronous errors are polled, and a verdict
  // aborts the NCCL communicator (kernels waiting on a lost peer) before the process exits.
  std::unique_ptr<Watchdog> watchdog;
  if (comm.size() > 1 && config.comm.watchdog) {
    WatchdogOptions w;
    w.collective_timeout_s = config.comm.timeout_s;
    w.heartbeat_timeout_s = config.comm.heartbeat_timeout_s;
    watchdog_network(config.comm, &w);
    std::function<void()> on_abort;
    if (device_comm) {
      Communicator* dc = device_comm.get();
      w.poll_error = [dc] { return dc->check_async_error(); };
      on_abort = [dc] { dc->abort(); };
    }
    try {
      watchdog = std::make_unique<Watchdog>(comm, w, on_abort);
    } catch (const std::exception& e) {
      error = brief_error(e);  // the same on every rank: the channel agreed on failure
    }
    if (!all_ok(comm, error)) return failed();
    startup_lines.push_back("watchdog: all " + std::to_string(comm.size()) +
                            " ranks connected to rank 0 at " + watchdog->root_endpoints() +
                            " with the job token");
  }
  WatchedCommunicator watched(transport, watchdog.get());

  std::unique_ptr<Trainer> trainer;
  try {
    TrainOptions opts;
    opts.resume = cmd.resume;
    opts.overwrite = cmd.overwrite;
    opts.local_rank = runtime.local_rank();
    opts.gpu = gpu;
    if (comm.rank() == 0) opts.startup_lines = std::move(startup_lines);
    trainer = std::make_unique<Trainer>(std::move(config), watched, opts);
    trainer->setup();
  } catch (const std::exception& e) {
    error = brief_error(e);
  }
  if (!all_ok(watched, error)) return failed();
  try {
    trainer->prepare();
  } catch (const std::exception& e) {
    error = brief_error(e);
  }
  if (!all_ok(watched, error)) return failed();
  int status = 0;
  try {
    trainer->run();
  } catch (const RunStopped& e) {
    // Every rank stopped at the same step boundary: a clean exit, rank 0 saying why.
    if (comm.rank() == 0) std::fprintf(stderr, "dynamix: error: %s\n", e.what());
    status = e.status();
  } catch (const std::exception& e) {
    // Mid-run failures may leave other ranks inside a collective: abort the whole job.
    MpiRuntime::abort(brief_error(e));
  }
  // Tear down and finalize while the watchdog still watches: MPI_Finalize waits for every rank,
  // so a rank that hangs after the last step (found by the chaos test: SIGSTOP at the end of a
  // run) would otherwise keep the whole job waiting forever, no one left to notice.
  trainer.reset();
  runtime.finalize();
  return status;
}

}  // namespace dynamix
