// DYNAMIX — this node's name, for messages and for telling nodes apart (header-only).
#pragma once

#include <unistd.h>

#include <climits>
#include <string>

namespace dynamix {

// gethostname(), "" when it fails.
inline std::string host_name() {
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) return "";
  return host;
}

}  // namespace dynamix
