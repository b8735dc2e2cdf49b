// DYNAMIX — one exception type for every failure, and the check macros that raise it.
#pragma once

#include <stdexcept>
#include <string>

namespace dynamix {

// Every error a user can act on: configuration, input files, collectives, checkpoints.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Rank of this process for error messages, set once MPI is up (-1 before).
void set_error_rank(int rank);
int error_rank();

[[noreturn]] void throw_call_error(const char* api, const char* call, const std::string& detail,
                                   const char* file, int line);

}  // namespace dynamix

// Throws dynamix::Error with the message when the condition fails.
#define DYNAMIX_CHECK(cond, msg)                           \
  do {                                                     \
    if (!(cond)) throw ::dynamix::Error(std::string(msg)); \
  } while (0)

// Checks an MPI call; the message carries the call, MPI's error string, the rank and file:line.
#define DYNAMIX_MPI_CHECK(call)                                                                         \
  do {                                                                                                  \
    int dynamix_mpi_rc_ = (call);                                                                       \
    if (dynamix_mpi_rc_ != 0) {                                                                         \
      ::dynamix::throw_call_error("MPI", #call, ::dynamix::mpi_error_string(dynamix_mpi_rc_), __FILE__, \
                                  __LINE__);                                                            \
    }                                                                                                   \
  } while (0)

namespace dynamix {
std::string mpi_error_string(int code);
}
