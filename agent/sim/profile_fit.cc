// DYNAMIX — least-squares fit of a simulator profile from metrics.jsonl.
#include "agent/sim/profile_fit.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/core/stats.h"

namespace dynamix {
namespace {

// The step records of a metrics.jsonl, by rank.
struct StepLog {
  std::vector<std::vector<double>> batches, times;  // [rank][step]
  std::vector<double> exposed;                      // [step] step_time − max compute, where given
  double grad_bytes = 0;
};

FittedRank fit_rank(const std::vector<double>& b, const std::vector<double>& t) {
  FittedRank f;
  const size_t n = b.size();
  auto point = [&](size_t k) { return WeightedPoint{b[k], t[k], 1.0}; };
  const auto [lo, hi] = std::minmax_element(b.begin(), b.end());
  const bool distinct = *hi - *lo >= 0.5;
  f.distinct_batches = distinct ? 2 : 1;
  const AffineFit affine = distinct ? fit_affine(n, point) : AffineFit{};
  if (affine.ok && affine.slope > 0 && affine.intercept >= 0) {
    f.alpha_s = affine.intercept;
    f.beta_s = affine.slope;
  } else {
    f.alpha_s = 0;  // proportional model through the origin
    f.beta_s = fit_through_origin(n, point);
  }
  double sq = 0;
  for (size_t k = 0; k < n; ++k) {
    const double pred = f.alpha_s + f.beta_s * b[k];
    sq += (t[k] - pred) * (t[k] - pred) / (pred * pred);
  }
  f.rel_residual = std::sqrt(sq / double(n));
  return f;
}

// Appends one step record; lines without batch_sizes/compute_time (not step records) are skipped.
void read_record(const nlohmann::json& j, const std::string& where, StepLog& log) {
  if (!j.contains("batch_sizes") || !j.contains("compute_time")) return;
  const auto& jb = j["batch_sizes"];
  const auto& jt = j["compute_time"];
  DYNAMIX_CHECK(jb.is_array() && jt.is_array() && jb.size() == jt.size() && !jb.empty(),
                where + ": batch_sizes and compute_time must be arrays of equal, non-zero length");
  if (log.batches.empty()) log.batches.resize(jb.size()), log.times.resize(jb.size());
  DYNAMIX_CHECK(jb.size() == log.batches.size(), where + ": " + std::to_string(jb.size()) +
                                                     " ranks, earlier lines had " +
                                                     std::to_string(log.batches.size()));
  double max_compute = 0;
  for (size_t r = 0; r < jb.size(); ++r) {
    DYNAMIX_CHECK(jb[r].is_number() && jt[r].is_number(),
                  where + ": non-numeric entry for rank " + std::to_string(r));
    const double b = jb[r].get<double>(), t = jt[r].get<double>();
    DYNAMIX_CHECK(b > 0 && std::isfinite(t) && t > 0,
                  where + ": rank " + std::to_string(r) + " needs batch > 0 and compute_time > 0");
    log.batches[r].push_back(b);
    log.times[r].push_back(t);
    max_compute = std::max(max_compute, t);
  }
  if (j.contains("step_time") && j["step_time"].is_number()) {
    log.exposed.push_back(std::max(0.0, j["step_time"].get<double>() - max_compute));
  }
  if (j.contains("comm") && j["comm"].is_object() && j["comm"].contains("bytes") &&
      j["comm"]["bytes"].is_number()) {
    log.grad_bytes = j["comm"]["bytes"].get<double>();
  }
}

StepLog read_log(const std::string& path) {
  std::ifstream in(path);
  DYNAMIX_CHECK(in.good(), "sim.profile.fit: cannot read '" + path + "'");
  StepLog log;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(line_no);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw Error(where + ": not JSON (" + e.what() + ")");
    }
    read_record(j, where, log);
  }
  DYNAMIX_CHECK(!log.batches.empty(),
                "sim.profile.fit: '" + path + "' has no step records with batch_sizes and compute_time");
  return log;
}

}  // namespace

FittedProfile fit_profile_from_metrics(const std::string& path) {
  StepLog log = read_log(path);
  const bool skip_first = log.batches[0].size() >= 10;  // the first step carries warm-up costs
  FittedProfile out;
  std::vector<double> residuals;
  for (size_t r = 0; r < log.batches.size(); ++r) {
    auto& b = log.batches[r];
    auto& t = log.times[r];
    if (skip_first) {
      b.erase(b.begin());
      t.erase(t.begin());
    }
    out.ranks.push_back(fit_rank(b, t));
    residuals.push_back(out.ranks.back().rel_residual);
  }
  if (skip_first && log.exposed.size() >= 10) log.exposed.erase(log.exposed.begin());
  out.exposed_comm_s = log.exposed.empty() ? 0 : median(log.exposed);
  out.grad_bytes = log.grad_bytes;
  out.noise = median(residuals);
  return out;
}

}  // namespace dynamix
