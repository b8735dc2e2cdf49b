// DYNAMIX — reading the plans a run replays; see plan_replay.h.
#include "framework/train/plan_replay.h"

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>

#include "framework/core/error.h"

namespace dynamix {
namespace {

std::vector<int32_t> read_plan(const nlohmann::json& line, int world, const std::string& where) {
  const auto it = line.find("plan");
  DYNAMIX_CHECK(it != line.end() && it->is_array(), where + ": no \"plan\" list");
  DYNAMIX_CHECK(
      it->size() == static_cast<size_t>(world),
      where + ": a plan of " + std::to_string(it->size()) + " ranks for a run of " + std::to_string(world));
  std::vector<int32_t> plan;
  for (const auto& b : *it) {
    DYNAMIX_CHECK(b.is_number_integer() && b.get<int64_t>() >= 1 && b.get<int64_t>() <= INT32_MAX,
                  where + ": batch size " + b.dump() + " is not an integer >= 1");
    plan.push_back(b.get<int32_t>());
  }
  return plan;
}

}  // namespace

PlanReplay PlanReplay::load(const std::string& path, int world) {
  std::ifstream in(path);
  DYNAMIX_CHECK(in.good(), "policy.replay: cannot read '" + path + "'");
  PlanReplay r;
  std::string text;
  int64_t last = 0;
  for (int64_t n = 1; std::getline(in, text); ++n) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = "policy.replay: " + path + " line " + std::to_string(n);
    const auto line = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    DYNAMIX_CHECK(line.is_object(), where + ": not a JSON object");
    const auto step = line.find("step");
    DYNAMIX_CHECK(
        step != line.end() && step->is_number_integer() && step->get<int64_t>() > last,
        where + ": \"step\" must be an integer above the line before's (" + std::to_string(last) + ")");
    last = step->get<int64_t>();
    r.plans_[last] = read_plan(line, world, where);
  }
  DYNAMIX_CHECK(!r.plans_.empty(), "policy.replay: '" + path + "' lists no decision");
  return r;
}

const std::vector<int32_t>* PlanReplay::plan_after(int64_t step) const {
  const auto it = plans_.find(step);
  return it == plans_.end() ? nullptr : &it->second;
}

}  // namespace dynamix
