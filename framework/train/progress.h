// DYNAMIX — rank 0's console while training (output.progress): a live progress line between the
// start, evaluation and decision lines. tty rewrites one line in place (at most 4 times a second),
// lines prints a full line every output.progress_interval_s, json one object per line for scripts
// (log lines and the result included), quiet only the final result. Fed from values rank 0
// already has after each step (the step exchange): no communication of its own.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "framework/config/choices.h"

namespace dynamix {

enum class ProgressMode { kTty, kLines, kJson, kQuiet };

// output.progress resolved: auto is tty when `terminal`, lines otherwise.
ProgressMode progress_mode(ProgressChoice choice, bool terminal);
// Whether stdout reaches a terminal. Open MPI gives every rank a pseudo-terminal whatever mpirun's
// own stdout is (a file, a pipe), so under it the launcher's (the parent's) stdout decides.
bool stdout_is_terminal();

// What rank 0 knows after one step.
struct ProgressStep {
  int64_t step = 0;          // steps done
  int64_t total_steps = 0;   // where the run will end (0 = unknown)
  double epoch = 0;          // fractional
  double wall_time = 0;      // the run's elapsed seconds
  double samples = 0;        // global samples of this step
  double loss = 0;           // the last steps' mean loss (the trainer's smoothing, as at evaluations)
  double wait_fraction = 0;  // straggler wait / step time, mean over ranks
  std::vector<int32_t> plan;
};

// The progress line's values, rates smoothed over the last few seconds. Negative: unknown.
struct ProgressSnapshot {
  int64_t step = 0;
  int64_t total_steps = 0;
  double epoch = 0;
  double wall_time = 0;
  double samples_per_s = -1;
  double loss = 0;  // as given with the last step
  double wait_fraction = -1;
  double eta_s = -1;
  std::vector<int32_t> plan;
};

std::string format_progress_line(const ProgressSnapshot& s);
nlohmann::json progress_json(const ProgressSnapshot& s);
// "[16,32]"; beyond 8 ranks "64 ranks min/med/max 8/32/64".
std::string format_plan(const std::vector<int32_t>& plan);
std::string format_duration(double seconds);  // "45s", "7m12s", "2h05m"

// Steps over a sliding time window: samples/s, steps/s (for the ETA) and the mean wait of the last
// window_s seconds (at least the last step, measured from the step before it).
class ProgressWindow {
 public:
  explicit ProgressWindow(double window_s) : window_s_(window_s) {}
  void begin(double now, int64_t step);  // the run's start (or resume) point
  void add(double now, const ProgressStep& s);
  ProgressSnapshot snapshot() const;

 private:
  struct Point {
    double t;
    int64_t step;
    double samples, wait;  // cumulative since begin()
    int64_t steps;         // add() calls since begin()
  };
  double window_s_;
  std::deque<Point> points_;
  ProgressStep last_;
};

// Thread-safe: the dynamix policy logs from its update thread too (ConsoleLogStream).
class ProgressConsole {
 public:
  using Clock = std::function<double()>;  // monotonic seconds
  static constexpr double kTtyRefreshS = 0.25;
  static constexpr double kRateWindowS = 5.0;

  // `clock` defaults to std::chrono::steady_clock.
  ProgressConsole(ProgressMode mode, double interval_s, std::FILE* out, Clock clock = nullptr);
  ~ProgressConsole();
  ProgressConsole(const ProgressConsole&) = delete;
  ProgressConsole& operator=(const ProgressConsole&) = delete;

  ProgressMode mode() const { return mode_; }
  void begin(int64_t step);
  // After each step; prints when the mode's interval has passed since the last print.
  void step(const ProgressStep& s);
  // A start, evaluation or decision line (tty: the progress line is cleared, then redrawn).
  void log(const std::string& line);
  // The final result, in every mode: `line` as text, `summary` as the json object.
  void result(const std::string& line, const nlohmann::json& summary);
  // tty: clears the progress line (before the run's last words or an error).
  void end_line();

 private:
  void print(const std::string& text);  // a whole line in the mode's form
  void draw();                          // tty: the progress line in place
  void clear();                         // tty: the progress line off the screen

  std::mutex mutex_;
  ProgressMode mode_;
  double interval_s_;
  std::FILE* out_;
  Clock clock_;
  ProgressWindow window_;
  double last_print_ = 0;
  bool drawn_ = false;  // tty: the progress line is on screen
  std::string line_;    // tty: what is on screen
};

// An std::ostream whose lines go to console.log(), for the dynamix policy's start-up and update
// lines: each thread's text is held until its newline, so lines of two threads never mix.
class ConsoleLogStream : public std::ostream {
 public:
  explicit ConsoleLogStream(ProgressConsole& console);

 private:
  class LineBuf : public std::streambuf {
   public:
    explicit LineBuf(ProgressConsole& console) : console_(console) {}

   protected:
    int overflow(int c) override;
    std::streamsize xsputn(const char* s, std::streamsize n) override;

   private:
    ProgressConsole& console_;
    std::mutex mutex_;
    std::map<std::thread::id, std::string> pending_;
  };
  LineBuf buf_;
};

}  // namespace dynamix
