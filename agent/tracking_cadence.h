// DYNAMIX — decisions brought forward while speeds drift. A plan is fitted to the window just
// past; under drifting speeds (RankTimeModels::tracking) the speeds have moved on by the time it
// is in force, by about one window. While the models say speeds drift, a decision is asked for
// every `divisor`-th of the regular window (at least `min_steps` steps): the lag shrinks with it.
// Steady speeds keep the regular window, where a longer mean averages the noise away.
#pragma once

#include <cstdint>

namespace dynamix {

class TrackingCadence {
 public:
  struct Options {
    int32_t divisor = 4;    // tracking decisions per regular window
    int32_t min_steps = 3;  // fewest steps a tracking decision's window may have
  };
  TrackingCadence() : TrackingCadence(Options{}) {}
  explicit TrackingCadence(Options options);

  // A decision was taken after `step` steps of the run, on a window of `window_steps` steps; the
  // longest window seen since reset() is the regular one (the others were brought forward).
  void decided(int64_t step, int32_t window_steps);
  // One step under the plan in force. True when speeds drift (`tracking`) and the decision this
  // asks for, taken after the next step (BatchPolicy::wants_decision), ends a tracking window:
  // `steps_due()` steps after the last decision, with at least `min_steps` left before the next
  // regular decision (a multiple of the regular window), which otherwise comes first.
  bool observe(bool tracking);
  // A new run or episode: the regular window is learned again.
  void reset();
  int32_t steps_due() const;  // steps a tracking window has (0: no regular window seen yet)
  // Whether a decision asked for now (taken after the next step) would end a window of fewer than
  // `min_steps` steps before the next regular decision: then the regular one should answer it
  // (the run decided at 39 on an alarm and again at 40 on one step). False before a regular
  // window is known, and where the two coincide.
  bool regular_decision_near() const;

 private:
  // Steps from the decision a request made now brings (after the next step) to the next regular
  // decision, 1 to regular_steps_ (regular_steps_: the two coincide). Needs regular_steps_ > 0.
  int64_t steps_to_regular() const;

  Options options_;
  int32_t regular_steps_ = 0;
  int32_t since_decision_ = 0;
  int64_t step_ = 0;  // steps of the run so far
};

}  // namespace dynamix
