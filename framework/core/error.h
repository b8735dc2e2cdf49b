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
