// DYNAMIX — checkpoint container.
#include "framework/train/checkpoint_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "framework/core/archive_check.h"
#include "framework/core/error.h"
#include "framework/core/file_io.h"

namespace dynamix {
namespace {

constexpr char kMagic[8] = {'D', 'Y', 'N', 'X', 'C', 'K', 'P', 'T'};
constexpr size_t kHeader = 8 + 4 + 4 + 8;

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

uint64_t get_le(const std::string& in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return v;
}

std::string dir_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error("checkpoint " + path + ": " + what);
}

}  // namespace

void write_checkpoint_file(const std::string& path, const std::string& payload) {
  std::string header(kMagic, sizeof(kMagic));
  put_le(header, kCheckpointVersion, 4);
  put_le(header, crc32_of(payload), 4);
  put_le(header, payload.size(), 8);

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, std::string("cannot create ") + tmp + ": " + std::strerror(errno));
  const bool ok = write_fully(fd, header) && write_fully(fd, payload) && ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(tmp.c_str());
    fail(path, std::string("write failed: ") + std::strerror(saved));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail(path, std::string("rename failed: ") + std::strerror(e));
  }
  // Persist the rename itself.
  const int dfd = ::open(dir_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::string read_checkpoint_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    fail(path, "is a directory, not a checkpoint file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::string data;
  try {  // libstdc++'s filebuf throws on a read error (EIO, ...) instead of setting badbit
    data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure&) {
    fail(path, std::string("cannot read: ") + std::strerror(errno));
  }
  if (in.bad()) fail(path, std::string("cannot read: ") + std::strerror(errno));
  if (data.size() < sizeof(kMagic) || std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0) {
    fail(path, "not a DYNAMIX checkpoint (bad magic)");
  }
  if (data.size() < kHeader) fail(path, "truncated header (" + std::to_string(data.size()) + " bytes)");
  const auto version = static_cast<uint32_t>(get_le(data, 8, 4));
  if (version != kCheckpointVersion) {
    fail(path, "format version " + std::to_string(version) + " is not supported (this build reads " +
                   std::to_string(kCheckpointVersion) + ")");
  }
  const auto crc = static_cast<uint32_t>(get_le(data, 12, 4));
  const uint64_t length = get_le(data, 16, 8);
  if (data.size() - kHeader != length) {
    fail(path, "truncated or padded: header says " + std::to_string(length) + " payload bytes, file has " +
                   std::to_string(data.size() - kHeader));
  }
  std::string payload = data.substr(kHeader);
  if (crc32_of(payload) != crc) fail(path, "checksum mismatch (file is corrupt)");
  return payload;
}

}  // namespace dynamix
