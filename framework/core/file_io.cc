// DYNAMIX — checked writes.
#include "framework/core/file_io.h"

#include <unistd.h>

#include <cerrno>

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

}  // namespace dynamix
