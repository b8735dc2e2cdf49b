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

// For commands that work a long time before they write: throw dynamix::Error, the message starting
// with `what`, unless a file could be created at PATH now (its directory exists and is writable,
// PATH is not a directory), or unless DIR is a writable directory or could be created (its nearest
// existing ancestor is a writable directory). Neither creates anything.
void check_file_creatable(const std::string& path, const std::string& what);
void check_dir_creatable(const std::string& dir, const std::string& what);

}  // namespace dynamix
