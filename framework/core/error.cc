// DYNAMIX — error helpers.
#include "framework/core/error.h"

#include <atomic>
#include <sstream>

namespace dynamix {
namespace {
std::atomic<int> g_rank{-1};
}

void set_error_rank(int rank) { g_rank.store(rank); }
int error_rank() { return g_rank.load(); }

void throw_call_error(const char* api, const char* call, const std::string& detail, const char* file,
                      int line) {
  std::ostringstream os;
  os << api << " call failed on rank " << error_rank() << ": " << call << ": " << detail << " (" << file
     << ":" << line << ")";
  throw Error(os.str());
}

}  // namespace dynamix
