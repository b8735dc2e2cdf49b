// DYNAMIX — ProcFile and small parsers for /proc text.
#include "bpf/proc_file.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

namespace dynamix {

ProcFile::ProcFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  buf_.resize(8192);
}

ProcFile::~ProcFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string_view ProcFile::read() {
  if (fd_ < 0) return {};
  size_t len = 0;
  for (;;) {
    if (len == buf_.size()) buf_.resize(buf_.size() * 2);
    ssize_t n = ::pread(fd_, &buf_[len], buf_.size() - len, static_cast<off_t>(len));
    if (n < 0) {
      if (errno == EINTR) continue;
      return {};
    }
    if (n == 0) break;
    len += static_cast<size_t>(n);
  }
  return std::string_view(buf_.data(), len);
}

int64_t find_kv(std::string_view text, std::string_view key) {
  size_t pos = 0;
  while ((pos = text.find(key, pos)) != std::string_view::npos) {
    const bool line_start = pos == 0 || text[pos - 1] == '\n';
    const size_t after = pos + key.size();
    if (line_start && after < text.size() && text[after] == ':') {
      size_t p = after + 1;
      uint64_t v = 0;
      if (next_u64(text, p, v)) return static_cast<int64_t>(v);
      return -1;
    }
    pos = after;
  }
  return -1;
}

bool next_u64(std::string_view text, size_t& pos, uint64_t& out) {
  while (pos < text.size() && (text[pos] < '0' || text[pos] > '9')) {
    if (text[pos] == '\n') return false;  // stay on the current line
    ++pos;
  }
  if (pos >= text.size()) return false;
  uint64_t v = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') v = v * 10 + uint64_t(text[pos++] - '0');
  out = v;
  return true;
}

}  // namespace dynamix
