// DYNAMIX — MPI runtime.
#include "framework/comm/mpi_runtime.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "framework/comm/mpi_check.h"
#include "framework/core/error.h"

namespace dynamix {

bool mpi_allows_comm_thread() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return false;
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  return level >= MPI_THREAD_SERIALIZED;
}

MpiRuntime::MpiRuntime(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
      std::fprintf(stderr, "dynamix: fatal: MPI_Init_thread failed\n");
      std::exit(1);
    }
    owns_ = true;
  }
  DYNAMIX_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  DYNAMIX_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  DYNAMIX_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_));
  set_error_rank(rank_);
  MPI_Comm local;
  DYNAMIX_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
  DYNAMIX_MPI_CHECK(MPI_Comm_rank(local, &local_rank_));
  DYNAMIX_MPI_CHECK(MPI_Comm_size(local, &local_size_));
  MPI_Comm_free(&local);
}

MpiRuntime::~MpiRuntime() { finalize(); }

void MpiRuntime::finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_ && !finalized) MPI_Finalize();
}

void MpiRuntime::abort(const std::string& message, int code) {
  int rank = error_rank();
  std::fprintf(stderr, "dynamix: rank %d: fatal: %s\n", rank, message.c_str());
  std::fflush(stderr);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace dynamix
