// DYNAMIX — the run's output directory (rank 0): metrics.jsonl, eval.jsonl, decisions.jsonl,
// summary.json, config.yaml and the checkpoint (DESIGN.md, "Outputs" contract); samples.jsonl
// with output.sample_log.
//
// Every write is checked. A log line is written whole or not at all (a failed append cuts what
// reached the file). After the first failure (a full disk, say) nothing more is written, not even
// a checkpoint, so the last good checkpoint and the logs stay consistent for --resume; the trainer
// reads failed() at the next step boundary and stops the run with error().
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace dynamix {

class RunOutputs {
 public:
  // Creates `dir` if needed. A fresh run empties the JSONL files; a resumed run keeps their
  // whole lines with step <= resume_step and cuts the rest (written after the checkpoint it
  // resumes from, or torn by a killed run) in place. `sample_log` adds samples.jsonl, kept and
  // cut alike. Throws dynamix::Error.
  RunOutputs(const std::string& dir, bool resume, int64_t resume_step, bool sample_log = false);
  ~RunOutputs();
  RunOutputs(const RunOutputs&) = delete;
  RunOutputs& operator=(const RunOutputs&) = delete;

  void metrics(const nlohmann::json& line) { append(metrics_, line); }
  void eval(const nlohmann::json& line) { append(eval_, line); }
  void decision(const nlohmann::json& line) { append(decisions_, line); }
  void samples(const nlohmann::json& line) { append(samples_, line); }  // only with sample_log
  // Atomic (temp file + rename); throws dynamix::Error.
  void write_file(const std::string& name, const std::string& text) const;
  // Like the logs, these record a failure instead of throwing, and do nothing after one.
  void write_summary(const nlohmann::json& summary);
  void write_checkpoint(const std::string& payload);
  // policy.pt: the batch policy as the run left it (dynamix: with policy.learn: true, what it
  // learned), in the format policy.checkpoint reads; nothing for a policy without state.
  void write_policy(const std::string& state);

  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }  // the first failed write: file and errno text
  const std::string& dir() const { return dir_; }
  std::string checkpoint_path() const { return checkpoint_path_in(dir_); }

  static std::string checkpoint_path_in(const std::string& dir) { return dir + "/checkpoint.pt"; }

 private:
  struct Log {
    std::string path;
    int fd = -1;
  };
  void open(Log& log, const std::string& name, bool resume, int64_t resume_step);
  void append(Log& log, const nlohmann::json& line);

  std::string dir_;
  std::string error_;
  Log metrics_, eval_, decisions_, samples_;
};

}  // namespace dynamix
