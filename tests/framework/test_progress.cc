// Rank 0's console (output.progress): the line's format, the sliding window's rates and ETA, and
// each mode's rate limit, on an injected clock (no sleeps).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "framework/core/error.h"
#include "framework/train/progress.h"

namespace dynamix {
namespace {

// A console writing to a temporary file, on a clock the test moves.
struct Harness {
  double now = 0;
  std::FILE* file = std::tmpfile();
  ProgressConsole console;

  Harness(ProgressMode mode, double interval_s) : console(mode, interval_s, file, [this] { return now; }) {
    console.begin(0);
  }
  ~Harness() { std::fclose(file); }

  // Steps 1..n, `dt` seconds each, 64 samples, loss 2 / step, wait 10 %, plan [32,32], of 100.
  void steps(int n, double dt) {
    for (int i = 0; i < n; ++i) {
      now += dt;
      ++step_;
      ProgressStep s;
      s.step = step_;
      s.total_steps = 100;
      s.epoch = step_ / 8.0;
      s.samples = 64;
      s.loss = 2.0 / step_;
      s.wait_fraction = 0.1;
      s.plan = {32, 32};
      console.step(s);
    }
  }
  std::string text() const {
    std::fflush(file);
    std::rewind(file);
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), file)) > 0) out.append(buf, n);
    return out;
  }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    std::istringstream in(text());
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  }
  int64_t step_ = 0;
};

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

TEST(Progress, ModeNames) {
  EXPECT_EQ(progress_mode(ProgressChoice::kAuto, true), ProgressMode::kTty);
  EXPECT_EQ(progress_mode(ProgressChoice::kAuto, false), ProgressMode::kLines);
  EXPECT_EQ(progress_mode(ProgressChoice::kTty, false), ProgressMode::kTty);
  EXPECT_EQ(progress_mode(ProgressChoice::kLines, true), ProgressMode::kLines);
  EXPECT_EQ(progress_mode(ProgressChoice::kJson, true), ProgressMode::kJson);
  EXPECT_EQ(progress_mode(ProgressChoice::kQuiet, true), ProgressMode::kQuiet);
}

TEST(Progress, Durations) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(44.6), "45s");
  EXPECT_EQ(format_duration(432), "7m12s");
  EXPECT_EQ(format_duration(7500), "2h05m");
}

TEST(Progress, PlanListedUpToEightRanksThenSummarized) {
  EXPECT_EQ(format_plan({16, 32}), "[16,32]");
  EXPECT_EQ(format_plan({1, 2, 3, 4, 5, 6, 7, 8}), "[1,2,3,4,5,6,7,8]");
  EXPECT_EQ(format_plan({64, 8, 32, 32, 16, 48, 40, 24, 30}), "9 ranks min/med/max 8/32/64");
}

TEST(Progress, LineHasEveryField) {
  ProgressSnapshot s;
  s.step = 120;
  s.total_steps = 960;
  s.epoch = 0.125;
  s.samples_per_s = 1843.4;
  s.loss = 1.23456;
  s.wait_fraction = 0.123;
  s.eta_s = 432;
  s.plan = {32, 32};
  EXPECT_EQ(format_progress_line(s),
            "progress: step 120/960 (12%) | epoch 0.12 | 1843 samples/s | loss 1.2346 | wait 12.3% | "
            "plan [32,32] | ETA 7m12s");
  s.total_steps = 0;  // unknown: no total, no percentage, no ETA
  s.samples_per_s = -1;
  s.eta_s = -1;
  EXPECT_EQ(
      format_progress_line(s),
      "progress: step 120 | epoch 0.12 | - samples/s | loss 1.2346 | wait 12.3% | plan [32,32] | ETA -");
}

TEST(Progress, WindowSmoothsOverTheLastSecondsAndEstimatesTheEnd) {
  ProgressWindow w(5.0);
  w.begin(0, 0);
  EXPECT_LT(w.snapshot().samples_per_s, 0);  // nothing measured yet
  // 10 steps: 2 s each at first (32 samples/s), then 1 s each (64 samples/s).
  double t = 0;
  for (int i = 1; i <= 10; ++i) {
    t += i <= 5 ? 2.0 : 1.0;
    ProgressStep s;
    s.step = i;
    s.total_steps = 30;
    s.samples = 64;
    s.loss = i;
    s.wait_fraction = i <= 5 ? 0.5 : 0.1;
    w.add(t, s);
  }
  const ProgressSnapshot snap = w.snapshot();  // the window: the last 5 steps, from t = 10 to 15
  EXPECT_EQ(snap.step, 10);
  EXPECT_DOUBLE_EQ(snap.samples_per_s, 64.0);
  EXPECT_DOUBLE_EQ(snap.loss, 10.0);  // the last step's (smoothed by the trainer)
  EXPECT_NEAR(snap.wait_fraction, 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(snap.eta_s, 20.0);  // 20 steps left at 1 step/s
}

TEST(Progress, SlowStepsStillMeasuredFromThePreviousStep) {
  ProgressWindow w(5.0);
  w.begin(0, 0);
  ProgressStep s;
  s.total_steps = 4;
  s.samples = 10;
  for (int i = 1; i <= 3; ++i) {
    s.step = i;
    w.add(20.0 * i, s);  // 20 s per step, longer than the window
  }
  const ProgressSnapshot snap = w.snapshot();
  EXPECT_DOUBLE_EQ(snap.samples_per_s, 0.5);
  EXPECT_DOUBLE_EQ(snap.eta_s, 20.0);
}

TEST(Progress, LinesEveryInterval) {
  Harness h(ProgressMode::kLines, 10.0);
  h.steps(35, 1.0);  // 35 s: lines at 10, 20 and 30 s
  const auto lines = h.lines();
  ASSERT_EQ(lines.size(), 3u) << h.text();
  EXPECT_EQ(lines[0].rfind("progress: step 10/100 (10%) | epoch 1.25 | 64 samples/s |", 0), 0u) << lines[0];
  EXPECT_EQ(lines[2].rfind("progress: step 30/100", 0), 0u) << lines[2];
  EXPECT_NE(lines[2].find("| wait 10.0% | plan [32,32] | ETA 1m10s"), std::string::npos) << lines[2];
  EXPECT_EQ(count(h.text(), "\r"), 0u);
}

TEST(Progress, TtyRewritesOneLineAtMostFourTimesASecond) {
  Harness h(ProgressMode::kTty, 10.0);  // the interval is for lines and json
  h.steps(16, 0.125);                   // 2 s of 8 steps a second: a redraw every other step
  const std::string out = h.text();
  EXPECT_EQ(count(out, "\r"), 8u) << out;
  EXPECT_EQ(count(out, "\x1b[K"), 8u);
  EXPECT_EQ(count(out, "\n"), 0u);
  EXPECT_EQ(out.rfind("\rprogress: step 15/100"), out.rfind('\r')) << out;
  // A log line clears the progress line, is printed whole, and the progress line comes back.
  h.console.log("[epoch 2.00 step 16] test loss 0.5");
  const std::string after = h.text().substr(out.size());
  EXPECT_EQ(after.rfind("\r\x1b[K[epoch 2.00 step 16] test loss 0.5\n\rprogress: step 15/100", 0), 0u)
      << after;
  // The result: the progress line cleared, then the result line.
  h.console.result("result: done", nlohmann::json::object());
  EXPECT_NE(h.text().find("\x1b[K\r\x1b[Kresult: done\n"), std::string::npos) << h.text();
}

TEST(Progress, JsonEveryLineIsAnObject) {
  Harness h(ProgressMode::kJson, 2.0);
  h.steps(3, 1.0);
  h.console.log("decision 1: kept the last plan");
  h.steps(3, 1.0);
  h.console.result("result: ignored in json", {{"steps", 6}, {"policy", "static"}});
  const auto lines = h.lines();
  ASSERT_EQ(lines.size(), 5u) << h.text();  // progress at 2 s and 4 s and 6 s, the log, the result
  std::vector<std::string> events;
  for (const auto& l : lines) events.push_back(nlohmann::json::parse(l).at("event").get<std::string>());
  EXPECT_EQ(events, (std::vector<std::string>{"progress", "log", "progress", "progress", "result"}));
  const auto p = nlohmann::json::parse(lines[0]);
  for (const char* key : {"step", "total_steps", "epoch", "wall_time", "samples_per_s", "loss",
                          "wait_fraction", "plan", "eta_s"}) {
    EXPECT_TRUE(p.contains(key)) << key << " missing in " << lines[0];
  }
  EXPECT_EQ(p.at("step"), 2);
  EXPECT_DOUBLE_EQ(p.at("samples_per_s").get<double>(), 64.0);
  EXPECT_EQ(p.at("plan").get<std::vector<int>>(), (std::vector<int>{32, 32}));
  EXPECT_EQ(nlohmann::json::parse(lines[1]).at("message"), "decision 1: kept the last plan");
  const auto r = nlohmann::json::parse(lines[4]);
  EXPECT_EQ(r.at("steps"), 6);
  EXPECT_EQ(r.at("policy"), "static");
}

TEST(Progress, QuietPrintsOnlyTheResult) {
  Harness h(ProgressMode::kQuiet, 1.0);
  h.steps(20, 1.0);
  h.console.log("[epoch 1.00 step 8] test loss 0.5");
  h.console.result("result: 2 ranks", nlohmann::json::object());
  EXPECT_EQ(h.text(), "result: 2 ranks\n");
}

TEST(Progress, PolicyStreamLinesStayWholeAcrossThreads) {
  Harness h(ProgressMode::kLines, 1000.0);
  ConsoleLogStream log(h.console);
  auto writer = [&log](const char* who) {
    for (int i = 0; i < 200; ++i) log << who << " update " << i << "\n" << std::flush;
  };
  std::thread a(writer, "alpha"), b(writer, "beta");
  a.join();
  b.join();
  log << "no newline yet";
  const auto lines = h.lines();
  ASSERT_EQ(lines.size(), 400u);
  int alpha = 0, beta = 0;
  for (const auto& l : lines) {
    const bool is_alpha = l.rfind("alpha update ", 0) == 0, is_beta = l.rfind("beta update ", 0) == 0;
    ASSERT_TRUE(is_alpha || is_beta) << "mixed line: " << l;
    EXPECT_EQ(l.substr(l.rfind(' ') + 1), std::to_string(is_alpha ? alpha++ : beta++)) << l;
  }
}

}  // namespace
}  // namespace dynamix
