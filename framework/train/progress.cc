// DYNAMIX — rank 0's console while training: the progress line, its modes and its rate limit.
#include "framework/train/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>

#include "framework/core/error.h"
#include "framework/core/strings.h"

namespace dynamix {
namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

nlohmann::json known(double v) {
  return v < 0 || std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v);
}

// Columns of the terminal on `f` (0: unknown, e.g. Open MPI's pseudo-terminal).
size_t terminal_width(std::FILE* f) {
  winsize ws{};
  if (ioctl(fileno(f), TIOCGWINSZ, &ws) != 0) return 0;
  return ws.ws_col;
}

// One JSON line; text that is not UTF-8 (a path, say) is replaced, not thrown on.
std::string dump_line(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool is_terminal_path(const std::string& p) {
  return p.rfind("/dev/pts/", 0) == 0 || p.rfind("/dev/tty", 0) == 0 || p == "/dev/console";
}

}  // namespace

ProgressMode progress_mode(ProgressChoice choice, bool terminal) {
  switch (choice) {
    case ProgressChoice::kAuto:
      return terminal ? ProgressMode::kTty : ProgressMode::kLines;
    case ProgressChoice::kTty:
      return ProgressMode::kTty;
    case ProgressChoice::kLines:
      return ProgressMode::kLines;
    case ProgressChoice::kJson:
      return ProgressMode::kJson;
    case ProgressChoice::kQuiet:
      return ProgressMode::kQuiet;
  }
  throw Error("output.progress: unknown value " + std::to_string(static_cast<int>(choice)));
}

bool stdout_is_terminal() {
  if (!isatty(STDOUT_FILENO)) return false;
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr) return true;
  char target[PATH_MAX];
  const std::string link = "/proc/" + std::to_string(getppid()) + "/fd/1";
  const ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
  return n > 0 && is_terminal_path(std::string(target, static_cast<size_t>(n)));
}

std::string format_duration(double s) {
  const long long t = std::llround(std::max(0.0, s));
  char buf[32];
  if (t < 60) {
    std::snprintf(buf, sizeof(buf), "%llds", t);
  } else if (t < 3600) {
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", t / 60, t % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", t / 3600, t % 3600 / 60);
  }
  return buf;
}

std::string format_plan(const std::vector<int32_t>& plan) {
  constexpr size_t kListed = 8;
  if (plan.size() <= kListed) {
    return "[" + join_plan(plan) + "]";
  }
  std::vector<int32_t> v = plan;
  std::sort(v.begin(), v.end());
  return std::to_string(v.size()) + " ranks min/med/max " + std::to_string(v.front()) + "/" +
         std::to_string(v[(v.size() - 1) / 2]) + "/" + std::to_string(v.back());
}

std::string format_progress_line(const ProgressSnapshot& s) {
  std::string line = "progress: step " + std::to_string(s.step);
  if (s.total_steps > 0) {
    line += "/" + std::to_string(s.total_steps) + " (" +
            format_number("%.0f", 100.0 * s.step / s.total_steps) + "%)";
  }
  line += " | epoch " + format_number("%.2f", s.epoch);
  line += " | " + (s.samples_per_s < 0 ? std::string("-") : format_number("%.0f", s.samples_per_s)) +
          " samples/s";
  line += " | loss " + format_number("%.4f", s.loss);
  line += " | wait " +
          (s.wait_fraction < 0 ? std::string("-") : format_number("%.1f", 100.0 * s.wait_fraction) + "%");
  line += " | plan " + format_plan(s.plan);
  line += " | ETA " + (s.eta_s < 0 ? std::string("-") : format_duration(s.eta_s));
  return line;
}

nlohmann::json progress_json(const ProgressSnapshot& s) {
  return {{"event", "progress"},
          {"step", s.step},
          {"total_steps", s.total_steps > 0 ? nlohmann::json(s.total_steps) : nlohmann::json(nullptr)},
          {"epoch", s.epoch},
          {"wall_time", s.wall_time},
          {"samples_per_s", known(s.samples_per_s)},
          {"loss", known(s.loss)},
          {"wait_fraction", known(s.wait_fraction)},
          {"plan", s.plan},
          {"eta_s", known(s.eta_s)}};
}

void ProgressWindow::begin(double now, int64_t step) {
  points_.assign(1, Point{now, step, 0, 0, 0});
  last_ = ProgressStep{};
  last_.step = step;
}

void ProgressWindow::add(double now, const ProgressStep& s) {
  if (points_.empty()) begin(now, s.step - 1);
  const Point& p = points_.back();
  points_.push_back(Point{now, s.step, p.samples + s.samples, p.wait + s.wait_fraction, p.steps + 1});
  // Keep one point at or before the window's start, so the window spans at least window_s_ (or
  // the whole run) and always the last step.
  while (points_.size() > 2 && points_[1].t <= now - window_s_) points_.pop_front();
  last_ = s;
}

ProgressSnapshot ProgressWindow::snapshot() const {
  ProgressSnapshot s;
  s.step = last_.step;
  s.total_steps = last_.total_steps;
  s.epoch = last_.epoch;
  s.wall_time = last_.wall_time;
  s.plan = last_.plan;
  s.loss = last_.loss;
  if (points_.size() < 2) return s;
  const Point& a = points_.front();
  const Point& b = points_.back();
  const double dt = b.t - a.t;
  const auto steps = static_cast<double>(b.steps - a.steps);
  s.wait_fraction = (b.wait - a.wait) / steps;
  if (dt <= 0) return s;
  s.samples_per_s = (b.samples - a.samples) / dt;
  if (s.total_steps > 0 && b.step > a.step) {
    s.eta_s = std::max<int64_t>(0, s.total_steps - s.step) * dt / static_cast<double>(b.step - a.step);
  }
  return s;
}

ProgressConsole::ProgressConsole(ProgressMode mode, double interval_s, std::FILE* out, Clock clock)
    : mode_(mode),
      interval_s_(mode == ProgressMode::kTty ? kTtyRefreshS : interval_s),
      out_(out),
      clock_(clock ? std::move(clock) : Clock(steady_seconds)),
      window_(kRateWindowS) {}

ProgressConsole::~ProgressConsole() { clear(); }

void ProgressConsole::begin(int64_t step) {
  std::lock_guard<std::mutex> lock(mutex_);
  const double now = clock_();
  window_.begin(now, step);
  last_print_ = mode_ == ProgressMode::kTty ? now - interval_s_ : now;  // tty: draw at the first step
}

void ProgressConsole::step(const ProgressStep& s) {
  if (mode_ == ProgressMode::kQuiet) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const double now = clock_();
  window_.add(now, s);
  if (now - last_print_ < interval_s_) return;
  last_print_ = now;
  const ProgressSnapshot snap = window_.snapshot();
  if (mode_ == ProgressMode::kTty) {
    line_ = format_progress_line(snap);
    draw();
  } else if (mode_ == ProgressMode::kJson) {
    std::fprintf(out_, "%s\n", dump_line(progress_json(snap)).c_str());
  } else {
    std::fprintf(out_, "%s\n", format_progress_line(snap).c_str());
  }
  std::fflush(out_);
}

void ProgressConsole::draw() {
  const size_t width = terminal_width(out_);
  // A line longer than the terminal would wrap, and \r would return to its last row only.
  const std::string shown = width > 1 && line_.size() >= width ? line_.substr(0, width - 1) : line_;
  std::fprintf(out_, "\r%s\x1b[K", shown.c_str());
  drawn_ = true;
}

void ProgressConsole::end_line() {
  std::lock_guard<std::mutex> lock(mutex_);
  clear();
}

void ProgressConsole::clear() {
  if (!drawn_) return;
  std::fputs("\r\x1b[K", out_);
  std::fflush(out_);
  drawn_ = false;
}

void ProgressConsole::print(const std::string& text) {
  if (mode_ == ProgressMode::kJson) {
    std::fprintf(out_, "%s\n", dump_line({{"event", "log"}, {"message", text}}).c_str());
  } else {
    const bool redraw = drawn_;
    clear();
    std::fprintf(out_, "%s\n", text.c_str());
    if (redraw) draw();
  }
  std::fflush(out_);
}

void ProgressConsole::log(const std::string& line) {
  if (mode_ == ProgressMode::kQuiet) return;
  std::lock_guard<std::mutex> lock(mutex_);
  print(line);
}

void ProgressConsole::result(const std::string& line, const nlohmann::json& summary) {
  std::lock_guard<std::mutex> lock(mutex_);
  clear();
  if (mode_ == ProgressMode::kJson) {
    nlohmann::json j = {{"event", "result"}};
    j.update(summary);
    std::fprintf(out_, "%s\n", dump_line(j).c_str());
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

ConsoleLogStream::ConsoleLogStream(ProgressConsole& console) : std::ostream(nullptr), buf_(console) {
  rdbuf(&buf_);
}

int ConsoleLogStream::LineBuf::overflow(int c) {
  if (c == traits_type::eof()) return traits_type::not_eof(c);
  const char ch = traits_type::to_char_type(c);
  xsputn(&ch, 1);
  return c;
}

std::streamsize ConsoleLogStream::LineBuf::xsputn(const char* s, std::streamsize n) {
  std::vector<std::string> lines;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto id = std::this_thread::get_id();
    std::string& text = pending_[id];
    text.append(s, static_cast<size_t>(n));
    size_t end;
    while ((end = text.find('\n')) != std::string::npos) {
      lines.push_back(text.substr(0, end));
      text.erase(0, end + 1);
    }
    if (text.empty()) pending_.erase(id);
  }
  for (const auto& line : lines) console_.log(line);
  return n;
}

}  // namespace dynamix
