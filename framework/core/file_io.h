// DYNAMIX — checked writes through POSIX file descriptors (checkpoints, run logs).
#pragma once

#include <cstddef>
#include <string>

namespace dynamix {

// Writes all `size` bytes, retrying short writes and EINTR. Returns false with errno set on
// failure (a write(2) that makes no progress counts as EIO); part of the data may be written.
bool write_fully(int fd, const char* data, size_t size);
inline bool write_fully(int fd, const std::string& s) { return write_fully(fd, s.data(), s.size()); }

// Writes `bytes` to PATH.tmp, then renames it to PATH: readers see the old file or the whole new
// one. Throws dynamix::Error naming the file and the reason; no .tmp is left behind.
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace dynamix
