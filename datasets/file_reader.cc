// DYNAMIX — gzip-or-raw file reading through zlib (gzread passes non-gzip files through unchanged).
#include "datasets/file_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "framework/core/error.h"

namespace dynamix {

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string find_plain_or_gz(const std::string& path) {
  if (file_exists(path)) return path;
  if (file_exists(path + ".gz")) return path + ".gz";
  return "";
}

std::vector<uint8_t> read_maybe_gz(const std::string& path) {
  if (!file_exists(path)) throw Error(path + ": file not found");
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw Error(path + ": cannot open: " + std::strerror(errno));
  gzbuffer(f, 1 << 20);
  std::vector<uint8_t> out;
  constexpr size_t kChunk = 1 << 22;
  for (;;) {
    size_t old = out.size();
    out.resize(old + kChunk);
    int n = gzread(f, out.data() + old, static_cast<unsigned>(kChunk));
    if (n < 0) {
      int code = 0;
      std::string msg = gzerror(f, &code);
      gzclose(f);
      throw Error(path + ": read failed (damaged gzip stream?): " + msg);
    }
    out.resize(old + static_cast<size_t>(n));
    if (n == 0) break;
  }
  // A gzip stream cut short reads as a short file; zlib reports it as Z_BUF_ERROR.
  int code = Z_OK;
  std::string msg = gzerror(f, &code);
  gzclose(f);
  if (code != Z_OK && code != Z_STREAM_END) {
    throw Error(path + ": damaged or truncated gzip stream: " + msg);
  }
  return out;
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
  if (!file_exists(path)) throw Error(path + ": file not found");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw Error(path + ": cannot stat: " + std::strerror(err));
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {  // mmap of length 0 fails; an empty file maps to nothing
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);
    if (p == MAP_FAILED) throw Error(path + ": cannot memory-map: " + std::strerror(err));
    data_ = static_cast<const uint8_t*>(p);
  } else {
    ::close(fd);
  }
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace dynamix
