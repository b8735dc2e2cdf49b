// DYNAMIX — least-squares fit of per-rank compute models from metrics.jsonl.
#include "agent/sim/profile_fit.h"

#include <Eigen/Dense>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "framework/core/error.h"

namespace dynamix {
namespace {

FittedRank fit_rank(const std::vector<double>& b, const std::vector<double>& t) {
  FittedRank f;
  const Eigen::Index n = Eigen::Index(b.size());
  const Eigen::Map<const Eigen::VectorXd> vb(b.data(), n), vt(t.data(), n);
  const bool distinct = vb.maxCoeff() - vb.minCoeff() >= 0.5;
  f.distinct_batches = distinct ? 2 : 1;
  if (distinct) {
    Eigen::MatrixXd A(n, 2);
    A.col(0).setOnes();
    A.col(1) = vb;
    const Eigen::Vector2d x = A.colPivHouseholderQr().solve(vt);
    f.alpha_s = x[0];
    f.beta_s = x[1];
  }
  if (!distinct || !(f.beta_s > 0) || f.alpha_s < 0) {
    f.alpha_s = 0;  // proportional model through the origin
    f.beta_s = vb.dot(vt) / vb.dot(vb);
  }
  const Eigen::VectorXd pred = (f.alpha_s + f.beta_s * vb.array()).matrix();
  f.rel_residual = std::sqrt((vt - pred).cwiseQuotient(pred).squaredNorm() / double(n));
  return f;
}

}  // namespace

std::vector<FittedRank> fit_profile_from_metrics(const std::string& path) {
  std::ifstream in(path);
  DYNAMIX_CHECK(in.good(), "sim.profile.fit: cannot read '" + path + "'");
  std::vector<std::vector<double>> batches, times;  // [rank][step]
  std::string line;
  int64_t line_no = 0, used = 0;
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
    if (!j.contains("batch_sizes") || !j.contains("compute_time")) continue;  // not a step record
    const auto& jb = j["batch_sizes"];
    const auto& jt = j["compute_time"];
    DYNAMIX_CHECK(jb.is_array() && jt.is_array() && jb.size() == jt.size() && !jb.empty(),
                  where + ": batch_sizes and compute_time must be arrays of equal, non-zero length");
    if (batches.empty()) batches.resize(jb.size()), times.resize(jb.size());
    DYNAMIX_CHECK(jb.size() == batches.size(), where + ": " + std::to_string(jb.size()) +
                                                   " ranks, earlier lines had " +
                                                   std::to_string(batches.size()));
    for (size_t r = 0; r < jb.size(); ++r) {
      DYNAMIX_CHECK(jb[r].is_number() && jt[r].is_number(),
                    where + ": non-numeric entry for rank " + std::to_string(r));
      const double b = jb[r].get<double>(), t = jt[r].get<double>();
      DYNAMIX_CHECK(b > 0 && std::isfinite(t) && t > 0,
                    where + ": rank " + std::to_string(r) + " needs batch > 0 and compute_time > 0");
      batches[r].push_back(b);
      times[r].push_back(t);
    }
    ++used;
  }
  DYNAMIX_CHECK(used > 0,
                "sim.profile.fit: '" + path + "' has no step records with batch_sizes and compute_time");
  std::vector<FittedRank> out;
  for (size_t r = 0; r < batches.size(); ++r) {
    auto& b = batches[r];
    auto& t = times[r];
    if (b.size() >= 10) {  // the first step carries allocation and warm-up costs
      b.erase(b.begin());
      t.erase(t.begin());
    }
    out.push_back(fit_rank(b, t));
  }
  return out;
}

}  // namespace dynamix
