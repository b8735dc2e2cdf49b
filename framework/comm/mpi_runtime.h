// DYNAMIX — MPI process lifetime: init/finalize, rank and world, clean abort naming the rank.
#pragma once

#include <string>

namespace dynamix {

// True when MPI is up with a thread level that lets a second thread make the calls
// (MPI_THREAD_SERIALIZED or more).
bool mpi_allows_comm_thread();

// How Open MPI's waits use the CPU ("yield" or "spin": its mpi_yield_when_idle, read through
// the MPI tool interface when an MpiRuntime initialized MPI); "" where the MPI library has no
// such variable or MPI was initialized by someone else (test binaries).
std::string mpi_idle_wait();

class MpiRuntime {
 public:
  // Initializes MPI (thread level SERIALIZED: the gradient comm thread calls MPI while the main
  // thread runs backward, never both at once) unless already up,
  // and switches MPI_COMM_WORLD to MPI_ERRORS_RETURN so DYNAMIX_MPI_CHECK reports failures.
  MpiRuntime(int* argc, char*** argv);
  ~MpiRuntime();  // finalizes if this object initialized MPI (unless finalize() did)
  // Finalizes now if this object initialized MPI (MPI_Finalize waits for every rank).
  void finalize();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  int rank() const { return rank_; }
  int world() const { return world_; }
  // Node-local rank (ranks sharing this host), for device selection.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }

  // Prints "dynamix: rank R: fatal: <message>" to stderr and aborts the whole job.
  [[noreturn]] static void abort(const std::string& message, int code = 1);

 private:
  bool owns_ = false;
  int rank_ = 0;
  int world_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
};

}  // namespace dynamix
