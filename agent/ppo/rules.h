// DYNAMIX — the engineered rules around the dynamix policy's learned move, each of which a run can
// switch off (`policy.rules_off`) to measure what it adds: the ablation of docs/RESULTS.md §3a.
// The learned layer's feature groups have their own ablation (pretraining's --ablate); since the
// shipped policy is its validated prior (docs/AGENT.md, "What is not done"), these rules are what
// decides. Header only: the config reader validates names without linking the agent.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace dynamix {

enum class Rule : uint8_t {
  kStartCheck,       // an unbalanced start asks for the first decision at once (AGENT.md items 7, 20)
  kChangeAlarm,      // a rank 2x off its model for 3 steps asks for a decision (item 5)
  kTracking,         // drifting speeds: decide every quarter window on the last window (items 6, 9)
  kPaidMoves,        // a move must pay for the plan change and gain min_move_gain (items 17, 19, 22, 31)
  kNoiseSplit,       // noisier ranks carry a little less (item 10)
  kHomogeneousHold,  // equal ranks, or a first window's noise, keep their plan (items 12, 13, 18, 23, 29, 30)
  kRecurringHold,    // interference that keeps coming back: its slow phase's plan held (item 16)
  kShortSpells,      // spells that end too soon to follow are held through, kept at their end (24, 37)
  kSlowdownReturn,   // back from a followed slowdown: the plan before it restored (items 25, 26, 37, 38)
  kLevelShifts,      // a clear change of speed under the restart threshold restarts a model (item 28)
  kCount
};

inline const std::array<const char*, static_cast<size_t>(Rule::kCount)>& rule_names() {
  static const std::array<const char*, static_cast<size_t>(Rule::kCount)> names = {
      "start_check",      "change_alarm",   "tracking",     "paid_moves",      "noise_split",
      "homogeneous_hold", "recurring_hold", "short_spells", "slowdown_return", "level_shifts"};
  return names;
}

// The rules in force: all of them unless switched off.
class RuleSet {
 public:
  bool on(Rule r) const { return !(off_ & bit(r)); }
  void turn_off(Rule r) { off_ |= bit(r); }
  bool all_on() const { return off_ == 0; }
  // Switches off each named rule; false (and `unknown` set to it) for a name that is not a rule's.
  bool turn_off(const std::vector<std::string>& names, std::string* unknown) {
    for (const std::string& name : names) {
      size_t k = 0;
      while (k < rule_names().size() && name != rule_names()[k]) ++k;
      if (k == rule_names().size()) {
        if (unknown) *unknown = name;
        return false;
      }
      turn_off(static_cast<Rule>(k));
    }
    return true;
  }
  // The rules off, as "a, b" (empty: none).
  std::string off_names() const {
    std::string out;
    for (size_t k = 0; k < rule_names().size(); ++k) {
      if (!on(static_cast<Rule>(k))) out += (out.empty() ? "" : ", ") + std::string(rule_names()[k]);
    }
    return out;
  }

 private:
  static uint32_t bit(Rule r) { return uint32_t{1} << static_cast<uint32_t>(r); }
  uint32_t off_ = 0;
};

}  // namespace dynamix
