// DYNAMIX — policy.replay: the plans of an earlier run put in force again, at the steps they were.
//
// An earlier run's decisions.jsonl says, for each decision, the step after which it was taken and
// the plan it put in force. A run with policy.replay takes a decision after each of those steps
// (asking for it one step ahead, as a policy's change alarm does, so the collectives are the same)
// and puts that plan in force; the policy still decides, and its own plan is logged as
// "proposed". Between the listed steps the plan stays. So the plans' cost on this machine is
// measured apart from the process that chose them: a static run replaying a dynamix run's plans
// does all of that run's steps at the same batch sizes, without the agent (docs/RESULTS.md §1,
// "Stop 74").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dynamix {

class PlanReplay {
 public:
  // Reads `path` (one JSON object per line with "step", an integer >= 1, and "plan", one batch
  // size >= 1 per rank; steps increasing). Throws dynamix::Error naming the file and the line of
  // anything else, or a plan of another length than `world`.
  static PlanReplay load(const std::string& path, int world);

  // The plan to put in force after `step`, or nullptr when the file lists none there.
  const std::vector<int32_t>* plan_after(int64_t step) const;

 private:
  std::map<int64_t, std::vector<int32_t>> plans_;
};

}  // namespace dynamix
