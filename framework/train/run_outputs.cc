// DYNAMIX — run outputs.
#include "framework/train/run_outputs.h"

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "framework/core/error.h"
#include "framework/core/file_io.h"
#include "framework/train/checkpoint_file.h"

namespace dynamix {
namespace {

constexpr const char* kSummary = "summary.json";
constexpr const char* kSamples = "samples.jsonl";

std::string errno_text() { return std::strerror(errno); }

// Bytes of the log's valid prefix for a resume at `resume_step`: whole lines (ending in '\n')
// that parse, up to the first with a later step. What follows was written after the checkpoint,
// or is the torn last line of a killed run.
off_t kept_prefix(const std::string& path, int64_t resume_step) {
  std::ifstream in(path, std::ios::binary);
  off_t kept = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no '\n': torn
    if (!line.empty()) {
      try {
        if (nlohmann::json::parse(line).value("step", int64_t{0}) > resume_step) break;
      } catch (const nlohmann::json::exception&) {
        break;
      }
    }
    kept += static_cast<off_t>(line.size() + 1);
  }
  return kept;
}

}  // namespace

RunOutputs::RunOutputs(const std::string& dir, bool resume, int64_t resume_step, bool sample_log)
    : dir_(dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw Error("output.dir '" + dir_ + "': cannot create: " + ec.message());
  // A run that was killed while writing a checkpoint leaves its temporary file (the checkpoint
  // itself is only ever replaced by a rename): remove such leftovers.
  const std::string stale_prefix =
      std::filesystem::path(checkpoint_path_in(dir_)).filename().string() + ".tmp.";
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    if (entry.path().filename().string().rfind(stale_prefix, 0) == 0)
      std::filesystem::remove(entry.path(), ec);
  }
  // A fresh run over an old one (--overwrite) starts from nothing: what the old run wrote at its
  // checkpoints or at its end must not pass for this run's should it stop before writing its own.
  // (The old policy.pt stays: a policy, not a claim about this run, and maybe this run's
  // policy.checkpoint.)
  if (!resume) {
    for (const std::string& path : {checkpoint_path_in(dir_), dir_ + "/" + kSummary, dir_ + "/" + kSamples}) {
      if (!std::filesystem::remove(path, ec) && ec)
        throw Error("cannot remove the old run's " + path + ": " + ec.message());
    }
  }
  open(metrics_, "metrics.jsonl", resume, resume_step);
  open(eval_, "eval.jsonl", resume, resume_step);
  open(decisions_, "decisions.jsonl", resume, resume_step);
  if (sample_log) open(samples_, kSamples, resume, resume_step);
}

RunOutputs::~RunOutputs() {
  for (Log* log : {&metrics_, &eval_, &decisions_, &samples_}) {
    if (log->fd >= 0) ::close(log->fd);
  }
}

void RunOutputs::open(Log& log, const std::string& name, bool resume, int64_t resume_step) {
  log.path = dir_ + "/" + name;
  // Cut in place, not rewritten: a resume on a nearly full disk needs no space for it.
  const off_t keep = resume ? kept_prefix(log.path, resume_step) : 0;
  log.fd = ::open(log.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log.fd < 0) throw Error("cannot write " + log.path + ": " + errno_text());
  if (::ftruncate(log.fd, keep) != 0) throw Error("cannot truncate " + log.path + ": " + errno_text());
}

void RunOutputs::append(Log& log, const nlohmann::json& line) {
  if (failed()) return;
  // One write(2) per line on an O_APPEND descriptor: a killed run keeps every completed line.
  const off_t before = ::lseek(log.fd, 0, SEEK_END);
  if (before >= 0 && write_fully(log.fd, line.dump() + '\n')) return;
  error_ = "cannot write " + log.path + ": " + errno_text();
  // Whole or not at all: cut what part of the line reached the file.
  if (before >= 0 && ::ftruncate(log.fd, before) != 0) {
    error_ += " (and cutting the partial line failed: " + errno_text() + ")";
  }
}

void RunOutputs::write_file(const std::string& name, const std::string& text) const {
  write_file_atomically(dir_ + "/" + name, text);
}

void RunOutputs::write_summary(const nlohmann::json& summary) {
  if (failed()) return;
  try {
    write_file(kSummary, summary.dump(2) + "\n");
  } catch (const Error& e) {
    error_ = e.what();
  }
}

void RunOutputs::write_policy(const std::string& state) {
  if (failed() || state.empty()) return;
  try {
    write_file("policy.pt", state);
  } catch (const Error& e) {
    error_ = e.what();
  }
}

void RunOutputs::write_checkpoint(const std::string& payload) {
  if (failed()) return;
  try {
    write_checkpoint_file(checkpoint_path(), payload);  // atomic: the last good one stays on failure
  } catch (const Error& e) {
    error_ = e.what();
  }
}

}  // namespace dynamix
