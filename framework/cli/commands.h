// DYNAMIX — the subcommands of the `dynamix` executable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dynamix {

struct TrainCommand {
  std::string config;
  std::vector<std::string> overrides;
  bool resume = false;
  bool overwrite = false;
  std::string progress;  // --progress: output.progress, applied after the --set overrides
};

struct BenchAllreduceCommand {
  int64_t min_bytes = 1024;
  int64_t max_bytes = 256LL << 20;
  int iters = 0;  // 0 = automatic (more for small sizes)
  double bucket_mb = 25.0;
  int params = 1;                // gradient tensors the grad path's bytes are split into
  std::string device = "cpu";    // cpu | cuda (the node-local rank's GPU)
  std::string backend = "auto";  // auto (nccl for cuda where built, else mpi) | mpi | nccl
};

struct BenchStepCommand {
  std::string config;
  std::vector<std::string> overrides;
  int steps = 60;
  int warmup = 10;
  int repeats = 3;
};

struct SimCommand {
  std::string config;
  std::vector<std::string> overrides;
  std::vector<std::string> policies;  // empty = the runner's default set
};

struct AgentEvalCommand {
  std::string suite;                   // directory of scenario YAML files
  std::vector<std::string> overrides;  // applied to every scenario
  std::vector<std::string> policies = {"static", "proportional", "gns", "dynamix"};
  int32_t seeds = 3;
  std::string output;  // eval.json / eval.csv
};

// Each returns the process exit code. `argc/argv` go to MPI_Init where MPI is used.
int run_train(const TrainCommand& cmd, int* argc, char*** argv);
int run_bench_allreduce(const BenchAllreduceCommand& cmd, int* argc, char*** argv);
int run_bench_step(const BenchStepCommand& cmd, int* argc, char*** argv);
int run_inspect(const std::string& path, bool json);
int run_sim_command(const SimCommand& cmd);
struct PretrainOptions;
int run_pretrain_command(const PretrainOptions& options);
int run_agent_eval_command(const AgentEvalCommand& cmd);

// Rank of this process from the launcher's environment (before MPI_Init); 0 if not launched.
int launcher_rank();
// One-line message of an exception (LibTorch errors without their backtrace).
std::string brief_error(const std::exception& e);

}  // namespace dynamix
