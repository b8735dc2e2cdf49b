// DYNAMIX — checked writes.
#include "framework/core/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "framework/core/error.h"

namespace dynamix {

bool write_fully(int fd, const char* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) {
      errno = EIO;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot write " + tmp + ": " + std::strerror(errno));
  const bool ok = write_fully(fd, bytes);
  const int saved = errno;
  if (::close(fd) != 0 || !ok) {
    const std::string why = std::strerror(ok ? errno : saved);
    ::unlink(tmp.c_str());
    throw Error("cannot write " + tmp + ": " + why);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw Error("cannot rename " + tmp + " to " + path + ": " + why);
  }
}

namespace {

void check_writable_dir(const std::filesystem::path& dir, const std::string& what) {
  if (::access(dir.c_str(), W_OK) != 0)
    throw Error(what + ": cannot write in '" + dir.string() + "': " + std::strerror(errno));
}

}  // namespace

void check_file_creatable(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(what + ": '" + path + "' is a directory");
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  if (!fs::is_directory(parent, ec)) {
    throw Error(what + ": '" + parent.string() + "' " +
                (fs::exists(parent, ec) ? "is not a directory" : "does not exist"));
  }
  check_writable_dir(parent, what);
}

void check_dir_creatable(const std::string& dir, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec);
  if (ec) throw Error(what + ": '" + dir + "': " + ec.message());
  while (!fs::exists(p, ec) && p.has_parent_path() && p.parent_path() != p) p = p.parent_path();
  if (!fs::is_directory(p, ec))
    throw Error(what + ": cannot create '" + dir + "': '" + p.string() + "' is not a directory");
  check_writable_dir(p, what);
}

}  // namespace dynamix
