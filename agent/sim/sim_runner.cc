// DYNAMIX — runs policies in the simulator, prints the comparison and writes per-policy outputs.
#include "agent/sim/sim_runner.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "agent/baseline_factory.h"
#include "agent/plan_projection.h"
#include "framework/core/error.h"
#include "framework/core/file_io.h"

namespace dynamix {
namespace {

namespace fs = std::filesystem;

std::ofstream open_out(const fs::path& path) {
  std::ofstream out(path);
  DYNAMIX_CHECK(out.good(), "output.dir: cannot write '" + path.string() + "'");
  return out;
}

// The policy as the run left it (dynamix: with policy.learn: true, what it learned) in the format
// policy.checkpoint reads; heuristics keep no state and write none.
void save_policy_state(const BatchPolicy& policy, const fs::path& dir) {
  const std::string state = policy.save_state();
  if (!state.empty()) write_file_atomically((dir / "policy.pt").string(), state);
}

// The policy must return a feasible plan; a broken one is projected (and says so) rather than
// ending the comparison.
BatchPlan checked(BatchPlan plan, const ClusterState& state) {
  const size_t n = state.nodes.size();
  bool ok = plan.batch_sizes.size() == n;
  int64_t sum = 0;
  for (size_t i = 0; ok && i < n; ++i) {
    const int32_t b = plan.batch_sizes[i];
    ok = b >= std::max(1, state.bounds.min) && b <= rank_max(state.bounds, i);
    sum += b;
  }
  if (ok && state.bounds.fixed_global) ok = sum == state.bounds.global_batch;
  if (ok) return plan;
  std::vector<int32_t> current(n);
  std::vector<double> desired(n);
  for (size_t i = 0; i < n; ++i) {
    current[i] = state.nodes[i].batch_size;
    desired[i] = plan.batch_sizes.size() == n ? plan.batch_sizes[i] : current[i];
  }
  BatchPlan fixed = project_plan(desired, current, state.bounds);
  fixed.actions = std::move(plan.actions);
  fixed.reward = plan.reward;
  fixed.has_reward = plan.has_reward;
  fixed.note = "runner projected an infeasible plan" + (plan.note.empty() ? "" : "; " + plan.note);
  return fixed;
}

nlohmann::json window_record(const ClusterState& s, double sim_time) {
  const NodeRecord& r0 = s.nodes.front();
  const double step = r0.compute_s + r0.wait_s + r0.comm_s;  // every rank's step lasts the same
  double wait = 0;
  for (const NodeRecord& r : s.nodes) wait += r.wait_s;
  return {{"window", s.window},
          {"step", s.global.step},
          {"sim_time", sim_time},
          {"global_batch", s.global.global_batch},
          {"throughput", step > 0 ? s.global.global_batch / step : 0.0},
          {"ideal_throughput", s.global.ideal_throughput},
          {"wait_fraction", step > 0 ? wait / (double(s.nodes.size()) * step) : 0.0},
          {"step_time_spread", s.global.step_time_spread},
          {"progress", s.global.progress},
          {"noise_scale", s.global.noise_scale},
          {"loss", s.global.loss}};
}

}  // namespace

std::vector<SimPolicyResult> run_sim_policies(const SimRunOptions& options) {
  DYNAMIX_CHECK(!options.policies.empty(), "sim: no policies to run");
  DYNAMIX_CHECK(!options.initial_plan.empty(), "batch.init: empty");
  const PolicyFactory factory = options.factory ? options.factory : PolicyFactory(make_baseline_policy);
  std::vector<SimPolicyResult> results;
  for (const std::string& name : options.policies) {
    ClusterSimulator sim(options.config, options.bounds, options.initial_plan, options.window);
    const BatchBounds& bounds = sim.bounds();  // global batch resolved from the initial plan
    std::unique_ptr<BatchPolicy> policy = factory(name, bounds, sim.plan());
    DYNAMIX_CHECK(policy != nullptr, "sim: no policy named '" + name + "'");

    std::ofstream decisions, windows;
    fs::path dir;
    if (!options.output_dir.empty()) {
      dir = fs::path(options.output_dir) / name;
      std::error_code ec;
      fs::create_directories(dir, ec);
      DYNAMIX_CHECK(!ec, "output.dir: cannot create '" + dir.string() + "': " + ec.message());
      decisions = open_out(dir / "decisions.jsonl");
      windows = open_out(dir / "sim_windows.jsonl");
    }

    ClusterState state = sim.reset(policy.get());
    if (windows.is_open()) windows << window_record(state, sim.sim_time()).dump() << '\n';
    int64_t count = 1;
    while (!sim.done()) {
      const BatchPlan plan = checked(policy->decide(state), state);
      if (decisions.is_open()) {
        nlohmann::json d = {{"window", state.window},
                            {"policy", name},
                            {"step", sim.steps()},
                            {"trigger", BatchPolicy::trigger(sim.steps(), sim.window())},
                            {"sim_time", sim.sim_time()},
                            {"plan", plan.batch_sizes},
                            {"actions", plan.actions},
                            {"reward", plan.has_reward ? nlohmann::json(plan.reward) : nlohmann::json()}};
        if (!plan.note.empty()) d["note"] = plan.note;
        decisions << d.dump() << '\n';
      }
      state = sim.step_window(plan, policy.get());
      ++count;
      if (windows.is_open()) windows << window_record(state, sim.sim_time()).dump() << '\n';
    }

    const SimTotals t = sim.totals();
    if (!dir.empty()) {
      const nlohmann::json summary = {
          {"world_size", sim.nodes()},
          {"policy", name},
          {"model", "sim"},
          {"dataset", "sim"},
          {"steps", t.steps},
          {"windows", count},
          {"total_time_s", t.sim_time_s},
          {"time_to_target_s",
           t.time_to_target_s >= 0 ? nlohmann::json(t.time_to_target_s) : nlohmann::json()},
          {"target_progress", options.config.workload.target_progress},
          {"progress", t.progress},
          {"mean_throughput", t.mean_throughput()},
          {"mean_wait_fraction", t.mean_wait_fraction()},
          {"sim_profile", options.config.profile},
          {"seed", options.config.seed},
          {"window", options.window},
          {"monitor_source", "sim"},
          {"backend", "sim"}};
      open_out(dir / "summary.json") << summary.dump(2) << '\n';
      save_policy_state(*policy, dir);
    }
    results.push_back({name, t, count});
  }
  return results;
}

int run_sim(const SimRunOptions& options) {
  std::ostream& out = options.log ? *options.log : std::cout;
  const std::vector<SimPolicyResult> results = run_sim_policies(options);
  // Times relative to static when it ran, else to the first policy.
  const SimPolicyResult* ref = &results.front();
  for (const auto& r : results) {
    if (r.policy == "static") ref = &r;
  }
  auto time_of = [](const SimPolicyResult& r) {
    return r.totals.time_to_target_s >= 0 ? r.totals.time_to_target_s : r.totals.sim_time_s;
  };
  char line[256];
  std::snprintf(line, sizeof line, "sim: %d nodes, profile %s, seed %llu, window %lld, target %.0f\n",
                options.config.nodes, options.config.profile.c_str(),
                static_cast<unsigned long long>(options.config.seed), static_cast<long long>(options.window),
                options.config.workload.target_progress);
  out << line;
  const std::string versus = "vs_" + ref->policy;
  std::snprintf(line, sizeof line, "%-14s %10s %18s %10s %14s %10s\n", "policy", "steps", "time_to_target_s",
                versus.c_str(), "samples_per_s", "wait_frac");
  out << line;
  for (const auto& r : results) {
    char target[32];
    if (r.totals.time_to_target_s >= 0) {
      std::snprintf(target, sizeof target, "%.2f", r.totals.time_to_target_s);
    } else {
      std::snprintf(target, sizeof target, "not reached");
    }
    std::snprintf(line, sizeof line, "%-14s %10lld %18s %10.3f %14.1f %10.3f\n", r.policy.c_str(),
                  static_cast<long long>(r.totals.steps), target, time_of(r) / time_of(*ref),
                  r.totals.mean_throughput(), r.totals.mean_wait_fraction());
    out << line;
  }
  if (!options.output_dir.empty()) out << "outputs: " << options.output_dir << "/<policy>/summary.json\n";
  return 0;
}

}  // namespace dynamix
