// DYNAMIX — run outputs.
#include "framework/train/run_outputs.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

#include "framework/core/error.h"

namespace dynamix {

RunOutputs::RunOutputs(const std::string& dir, bool resume, int64_t resume_step) : dir_(dir) {
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
  open(metrics_, "metrics.jsonl", resume, resume_step);
  open(eval_, "eval.jsonl", resume, resume_step);
  open(decisions_, "decisions.jsonl", resume, resume_step);
}

void RunOutputs::open(std::ofstream& out, const std::string& name, bool resume, int64_t resume_step) {
  const std::string path = dir_ + "/" + name;
  std::vector<std::string> kept;
  if (resume) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      try {
        const auto j = nlohmann::json::parse(line);
        if (j.value("step", int64_t{0}) <= resume_step) kept.push_back(line);
      } catch (const nlohmann::json::exception&) {
        break;  // a torn last line from a killed run ends the valid prefix
      }
    }
  }
  out.open(path, std::ios::out | std::ios::trunc);
  if (!out) throw Error("cannot write " + path + ": " + std::strerror(errno));
  for (const auto& l : kept) out << l << '\n';
  out.flush();
}

void RunOutputs::append(std::ofstream& out, const nlohmann::json& line) {
  out << line.dump() << '\n';
  out.flush();  // a killed run keeps every completed line
}

void RunOutputs::write_file(const std::string& name, const std::string& text) const {
  const std::string path = dir_ + "/" + name;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::out | std::ios::trunc);
    out << text;
    if (!out) throw Error("cannot write " + tmp + ": " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw Error("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  }
}

void RunOutputs::write_summary(const nlohmann::json& summary) const {
  write_file("summary.json", summary.dump(2) + "\n");
}

}  // namespace dynamix
