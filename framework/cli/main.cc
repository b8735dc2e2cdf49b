// DYNAMIX — `dynamix` executable: train, bench, inspect, sim, monitor (and agent pretrain).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "agent/ppo/pretrain.h"
#include "bpf/monitor_cli.h"
#include "framework/cli/commands.h"
#include "framework/cli/number_checks.h"
#include "framework/cli/version.h"
#include "framework/config/choices.h"
#include "framework/config/config.h"

int main(int argc, char** argv) {
  using namespace dynamix;
  CLI::App app{"DYNAMIX: data-parallel training for heterogeneous clusters"};
  // At most one, so that a misspelt flag (`--verison`) is named; none is refused after parsing.
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", version_text());

  TrainCommand train;
  auto* t = app.add_subcommand("train", "train a model data-parallel (launch with mpirun / srun)");
  t->add_option("--config,-c", train.config, "YAML configuration file")->required();
  t->add_option("--set", train.overrides, "override a config key: key.sub=value (repeatable)");
  t->add_flag("--resume", train.resume, "continue from output.dir's last checkpoint");
  t->add_flag("--overwrite", train.overwrite, "replace a previous run in output.dir");
  t->add_option("--progress", train.progress,
                "rank 0's console: auto|tty|lines|json|quiet (sets output.progress)");

  auto* bench = app.add_subcommand("bench", "benchmarks");
  bench->require_subcommand(1);
  BenchAllreduceCommand ar;
  auto* b_ar = bench->add_subcommand("allreduce",
                                     "gradient allreduce path vs one allreduce of a flat buffer (mpirun)");
  b_ar->add_option("--min-bytes", ar.min_bytes, "smallest buffer")->check(kPositive);
  b_ar->add_option("--max-bytes", ar.max_bytes, "largest buffer")->check(kPositive);
  b_ar->add_option("--iters", ar.iters, "timed iterations per size (0 = automatic)")->check(kNonNegative);
  b_ar->add_option("--bucket-mb", ar.bucket_mb, "bucket size of the DYNAMIX path")->check(kPositive);
  b_ar->add_option("--params", ar.params, "gradient tensors per size on the grad path")->check(kPositive);
  b_ar->add_option("--device", ar.device, "where gradients live: cpu | cuda (node-local rank's GPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  b_ar->add_option("--backend", ar.backend, "auto (nccl for cuda where built) | mpi | nccl")
      ->check(CLI::IsMember(choice_names<Backend>()));
  BenchStepCommand st;
  auto* b_st = bench->add_subcommand("step", "framework step time vs a bare LibTorch loop (1 rank)");
  b_st->add_option("--config,-c", st.config, "YAML configuration (default: cnn on synthetic 1x28x28, b=64)");
  b_st->add_option("--set", st.overrides, "override a config key (repeatable)");
  b_st->add_option("--steps", st.steps, "timed steps per repeat")->check(kPositive);
  b_st->add_option("--warmup", st.warmup, "untimed steps first")->check(kNonNegative);
  b_st->add_option("--repeats", st.repeats, "alternating repeats of both loops")->check(kPositive);

  std::string ckpt;
  bool inspect_json = false;
  auto* ins = app.add_subcommand("inspect", "print a checkpoint's progress record");
  ins->add_option("checkpoint", ckpt, "checkpoint file, or a run's output directory (its checkpoint.pt)")
      ->required();
  ins->add_flag("--json", inspect_json, "print JSON");

  SimCommand sim;
  auto* s = app.add_subcommand("sim", "run batch policies on a simulated cluster (no MPI)");
  s->add_option("--config,-c", sim.config, "YAML with a `sim` block plus batch/policy/output")->required();
  s->add_option("--set", sim.overrides, "override a config key (repeatable)");
  s->add_option("--policies", sim.policies, "policies to compare (default: static proportional gns)")
      ->delimiter(',')
      ->check(CLI::IsMember(policy_names()));

  PretrainOptions pre;
  auto* agent = app.add_subcommand("agent", "the PPO agent");
  agent->require_subcommand(1);
  auto* pt = agent->add_subcommand("pretrain", "train a policy in the simulator over randomized clusters");
  pt->add_option("--episodes", pre.episodes, "simulated episodes")->capture_default_str()->check(kPositive);
  pt->add_option("--seed", pre.seed, "seed of clusters, events and sampling")->capture_default_str();
  pt->add_option("--min-nodes", pre.min_nodes, "smallest cluster")->capture_default_str()->check(kPositive);
  pt->add_option("--max-nodes", pre.max_nodes, "largest cluster")->capture_default_str()->check(kPositive);
  pt->add_option("--output,-o", pre.output, "save the trained policy here")->required();
  pt->add_option("--from", pre.checkpoint, "fine-tune this saved policy");
  pt->add_option("--ablate", pre.ppo.ablate,
                 "feature groups the policy never sees: balance, timing, memory, system, network, "
                 "statistics (comma list; for ablations)")
      ->delimiter(',');
  pt->add_option("--exclude", pre.exclude,
                 "episode kinds never drawn: homogeneous, static, step, transient, periodic, wave, drift, "
                 "recover (comma list; to test fine-tuning on a held-out family)")
      ->delimiter(',');
  pt->add_option("--validate-every", pre.validate_every,
                 "episodes between scorings of the greedy policy on fixed validation clusters; the "
                 "best scoring weights are saved, a later snapshot replacing them only if it scores "
                 "over 0.002 higher (0: save the last)")
      ->capture_default_str()
      ->check(kNonNegative);
  pt->add_option("--validation-episodes", pre.validation_episodes, "validation clusters")
      ->capture_default_str()
      ->check(kPositive);
  pt->add_option("--log-every", pre.log_every, "episodes per progress line")
      ->capture_default_str()
      ->check(kPositive);

  AgentEvalCommand ev;
  auto* ae = agent->add_subcommand("eval", "every policy over a suite of simulator scenarios and seeds");
  ae->add_option("--suite", ev.suite, "directory of scenario YAML files (e.g. configs/agent_suite)")
      ->required();
  ae->add_option("--policies", ev.policies, "policies (static, proportional and gns are always added)")
      ->delimiter(',')
      ->check(CLI::IsMember(policy_names()));
  ae->add_option("--seeds", ev.seeds, "seeds per scenario")->capture_default_str()->check(kPositive);
  ae->add_option("--set", ev.overrides, "override a config key in every scenario (repeatable)");
  ae->add_option("--output,-o", ev.output, "write eval.json and eval.csv here");

  MonitorCliOptions mon;
  auto* m = app.add_subcommand("monitor", "live table of this machine's TCP flows and system metrics");
  m->add_option("--ebpf", mon.ebpf, "eBPF probes: auto | on | off")
      ->check(CLI::IsMember(choice_names<EbpfMode>()));
  m->add_option("--interval", mon.interval_s, "seconds between refreshes")->check(kPositive);
  m->add_option("--count", mon.count, "refreshes (0 = until interrupted)")->check(kNonNegative);
  m->add_option("--pid", mon.pids, "watch only these processes (repeatable)");
  m->add_option("--gpu", mon.gpu_index, "NVML device index (-1 = none)");
  m->add_option("--flows", mon.max_flows, "rows per refresh")->check(kPositive);

  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) throw CLI::RequiredError("A subcommand");
  } catch (const CLI::ParseError& e) {
    if (launcher_rank() == 0) return app.exit(e);
    return e.get_exit_code();
  }
  if (*t) return run_train(train, &argc, &argv);
  if (*b_ar) return run_bench_allreduce(ar, &argc, &argv);
  if (*b_st) return run_bench_step(st, &argc, &argv);
  if (*ins) return run_inspect(ckpt, inspect_json);
  if (*s) return run_sim_command(sim);
  if (*pt) return run_pretrain_command(pre);
  if (*ae) return run_agent_eval_command(ev);
  if (*m) {
    try {
      return run_monitor(mon);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "dynamix: error: %s\n", e.what());
      return 2;
    }
  }
  return 2;
}
