// DYNAMIX — the run's output directory (rank 0): metrics.jsonl, eval.jsonl, decisions.jsonl,
// summary.json, config.yaml and the checkpoint (DESIGN.md, "Outputs" contract).
#pragma once

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace dynamix {

class RunOutputs {
 public:
  // Creates `dir` if needed. A fresh run truncates the JSONL files; a resumed run keeps the lines
  // with step <= resume_step and drops the rest (written after the checkpoint it resumes from).
  RunOutputs(const std::string& dir, bool resume, int64_t resume_step);

  void metrics(const nlohmann::json& line) { append(metrics_, line); }
  void eval(const nlohmann::json& line) { append(eval_, line); }
  void decision(const nlohmann::json& line) { append(decisions_, line); }
  // Atomic writes (temp file + rename).
  void write_file(const std::string& name, const std::string& text) const;
  void write_summary(const nlohmann::json& summary) const;

  const std::string& dir() const { return dir_; }
  std::string checkpoint_path() const { return checkpoint_path_in(dir_); }

  static std::string checkpoint_path_in(const std::string& dir) { return dir + "/checkpoint.pt"; }

 private:
  static void append(std::ofstream& out, const nlohmann::json& line);
  void open(std::ofstream& out, const std::string& name, bool resume, int64_t resume_step);

  std::string dir_;
  std::ofstream metrics_, eval_, decisions_;
};

}  // namespace dynamix
