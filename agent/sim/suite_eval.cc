// DYNAMIX — policy comparison over a scenario suite in the simulator.
#include "agent/sim/suite_eval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/core/file_io.h"
#include "framework/core/stats.h"
#include "framework/core/strings.h"

namespace dynamix {
namespace {

double worst(const std::vector<double>& v) { return v.empty() ? NAN : *std::max_element(v.begin(), v.end()); }

double time_of(const SimTotals& t) { return t.time_to_target_s >= 0 ? t.time_to_target_s : t.sim_time_s; }

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::string fmt(double v, const char* spec = "%.3f") {
  return std::isfinite(v) ? format_number(spec, v) : "-";
}

// Every policy must be in the run: the ratios need static and both heuristics.
std::vector<std::string> with_references(std::vector<std::string> policies) {
  for (const char* ref : {"static", "proportional", "gns"}) {
    if (std::find(policies.begin(), policies.end(), ref) == policies.end())
      policies.insert(policies.begin(), ref);
  }
  return policies;
}

std::vector<SuiteRow> evaluate_scenario(const SuiteScenario& sc, const SuiteEvalOptions& o,
                                        const std::vector<std::string>& policies) {
  std::map<std::string, std::vector<double>> times, vs_static, vs_best, ideal;
  std::map<std::string, int32_t> reached;
  for (int32_t seed = 0; seed < o.seeds; ++seed) {
    SimRunOptions run = sc.run;
    run.config.seed = sc.run.config.seed + uint64_t(seed);
    run.policies = policies;
    if (!run.factory) run.factory = o.factory;
    run.output_dir.clear();
    std::map<std::string, SimTotals> t;
    for (const SimPolicyResult& r : run_sim_policies(run)) t[r.policy] = r.totals;
    const double t_static = time_of(t.at("static"));
    const double t_best = std::min(time_of(t.at("proportional")), time_of(t.at("gns")));
    for (const auto& [name, totals] : t) {
      times[name].push_back(time_of(totals));
      vs_static[name].push_back(time_of(totals) / t_static);
      vs_best[name].push_back(time_of(totals) / t_best);
      ideal[name].push_back(totals.ideal_fraction());
      reached[name] += totals.time_to_target_s >= 0;
    }
  }
  std::vector<SuiteRow> rows;
  for (const std::string& p : policies) {
    rows.push_back({sc.name, p, median(times[p]), median(vs_static[p]), median(vs_best[p]), median(ideal[p]),
                    reached[p]});
  }
  return rows;
}

void write_files(const std::vector<SuiteRow>& rows, const SuiteEvalOptions& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(o.output, ec);
  DYNAMIX_CHECK(!ec, "agent eval: cannot create '" + o.output + "': " + ec.message());
  nlohmann::json all = nlohmann::json::array();
  std::ofstream csv(fs::path(o.output) / "eval.csv");
  DYNAMIX_CHECK(csv.good(), "agent eval: cannot write " + o.output + "/eval.csv");
  csv << "scenario,policy,time_s,vs_static,vs_best_heuristic,ideal_fraction,seeds_reached\n";
  for (const SuiteRow& r : rows) {
    all.push_back({{"scenario", r.scenario},
                   {"policy", r.policy},
                   {"time_s", r.time_s},
                   {"vs_static", r.vs_static},
                   {"vs_best_heuristic", r.vs_best},
                   {"ideal_fraction", r.ideal_fraction},
                   {"seeds_reached", r.reached}});
    csv << r.scenario << ',' << r.policy << ',' << r.time_s << ',' << r.vs_static << ',' << r.vs_best << ','
        << r.ideal_fraction << ',' << r.reached << '\n';
  }
  std::ofstream json(fs::path(o.output) / "eval.json");
  json << nlohmann::json{{"seeds", o.seeds}, {"rows", all}}.dump(2) << '\n';
  DYNAMIX_CHECK(csv.good() && json.good(), "agent eval: write failed under " + o.output);
}

}  // namespace

std::vector<SuiteRow> evaluate_suite(const SuiteEvalOptions& o) {
  DYNAMIX_CHECK(!o.scenarios.empty(), "agent eval: the suite has no scenarios");
  DYNAMIX_CHECK(o.seeds >= 1, "agent eval: --seeds must be >= 1");
  const std::vector<std::string> policies = with_references(o.policies);
  std::vector<SuiteRow> rows;
  for (const SuiteScenario& sc : o.scenarios) {
    for (SuiteRow& r : evaluate_scenario(sc, o, policies)) rows.push_back(std::move(r));
  }
  return rows;
}

int run_suite_eval(const SuiteEvalOptions& o) {
  std::ostream& out = o.log ? *o.log : std::cout;
  if (!o.output.empty()) check_dir_creatable(o.output, "agent eval: --output");  // before the long part
  const std::vector<SuiteRow> rows = evaluate_suite(o);
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %-13s %12s %10s %10s %8s %8s\n", "scenario", "policy", "time_s",
                "vs_static", "vs_best_h", "ideal", "reached");
  out << "agent eval: " << o.scenarios.size() << " scenarios x " << o.seeds << " seeds (medians over seeds)\n"
      << line;
  for (const SuiteRow& r : rows) {
    std::snprintf(line, sizeof line, "%-28s %-13s %12s %10s %10s %8s %5d/%d\n", r.scenario.c_str(),
                  r.policy.c_str(), fmt(r.time_s, "%.2f").c_str(), fmt(r.vs_static).c_str(),
                  fmt(r.vs_best).c_str(), fmt(r.ideal_fraction).c_str(), r.reached, o.seeds);
    out << line;
  }
  std::snprintf(line, sizeof line, "\n%-13s %10s %10s %10s %10s %12s %12s %12s\n", "policy", "med_static",
                "worst_stat", "med_best_h", "worst_bst", "dyn_med_bst", "homog_worst", "static_ideal");
  out << line;
  for (const std::string& p : with_references(o.policies)) {
    std::vector<double> vs_static, vs_best, dynamic, homogeneous, ideal;
    for (const SuiteRow& r : rows) {
      if (r.policy != p) continue;
      vs_static.push_back(r.vs_static);
      vs_best.push_back(r.vs_best);
      if (starts_with(r.scenario, "dynamic")) dynamic.push_back(r.vs_best);
      if (starts_with(r.scenario, "homogeneous")) homogeneous.push_back(r.vs_static);
      if (starts_with(r.scenario, "static")) ideal.push_back(r.ideal_fraction);
    }
    std::snprintf(line, sizeof line, "%-13s %10s %10s %10s %10s %12s %12s %12s\n", p.c_str(),
                  fmt(median(vs_static)).c_str(), fmt(worst(vs_static)).c_str(), fmt(median(vs_best)).c_str(),
                  fmt(worst(vs_best)).c_str(), fmt(median(dynamic)).c_str(), fmt(worst(homogeneous)).c_str(),
                  fmt(median(ideal)).c_str());
    out << line;
  }
  if (!o.output.empty()) {
    write_files(rows, o);
    out << "outputs: " << o.output << "/eval.json, eval.csv\n";
  }
  return 0;
}

}  // namespace dynamix
