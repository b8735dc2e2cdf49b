// DYNAMIX — a /proc file kept open and re-read from offset 0 (cheaper than reopening per sample).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dynamix {

class ProcFile {
 public:
  explicit ProcFile(std::string path);
  ~ProcFile();
  ProcFile(const ProcFile&) = delete;
  ProcFile& operator=(const ProcFile&) = delete;

  bool ok() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  // Whole current content; empty view when the file cannot be read.
  std::string_view read();

 private:
  std::string path_;
  int fd_ = -1;
  std::string buf_;
};

// Value after "key" in "key: value ..." text (meminfo, status); -1 when absent.
int64_t find_kv(std::string_view text, std::string_view key);

// Parses the next unsigned integer at or after pos, advancing pos; false when none is left.
bool next_u64(std::string_view text, size_t& pos, uint64_t& out);

}  // namespace dynamix
