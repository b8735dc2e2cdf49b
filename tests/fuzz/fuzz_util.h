// DYNAMIX fuzz targets — small helpers shared by the harnesses (byte splitting, in-memory files).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "datasets/file_reader.h"

namespace dynamix::fuzz {

// Reads fuzz input front to back; running out of bytes yields zeros / empty pieces, never fails.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint32_t le16() { return byte() | (uint32_t{byte()} << 8); }
  // The next `n` bytes, or fewer if the input ends first.
  std::vector<uint8_t> take(size_t n) {
    n = std::min(n, size_ - pos_);
    std::vector<uint8_t> out(data_ + pos_, data_ + pos_ + n);
    pos_ += n;
    return out;
  }
  std::vector<uint8_t> rest() { return take(size_ - pos_); }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

inline bool is_gzip(const std::vector<uint8_t>& b) { return b.size() >= 2 && b[0] == 0x1f && b[1] == 0x8b; }

// A file that lives in memory (memfd), for readers that only take a path: no disk I/O, no
// leftovers when the fuzzer is killed. path() is /proc/self/fd/N.
class MemFile {
 public:
  explicit MemFile(const void* data, size_t size) {
    fd_ = ::memfd_create("dynamix_fuzz", MFD_CLOEXEC);
    if (fd_ < 0) std::abort();
    const char* p = static_cast<const char*>(data);
    for (size_t done = 0; done < size;) {
      const ssize_t n = ::write(fd_, p + done, size - done);
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// A broken invariant: print it and abort, which libFuzzer reports as a crash with the input saved.
// `bytes` decompressed by read_maybe_gz (through a memfd) when they start with the gzip magic.
inline std::vector<uint8_t> maybe_gunzip(std::vector<uint8_t> bytes) {
  if (!is_gzip(bytes)) return bytes;
  MemFile f(bytes.data(), bytes.size());
  return read_maybe_gz(f.path());
}

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "DYNAMIX fuzz invariant failed: %s\n", what.c_str());
  std::abort();
}

}  // namespace dynamix::fuzz
