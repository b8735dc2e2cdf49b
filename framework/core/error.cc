// DYNAMIX — error helpers.
#include "framework/core/error.h"

#include <mpi.h>

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

std::string mpi_error_string(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(buf, static_cast<size_t>(len));
}

}  // namespace dynamix
