// DYNAMIX — MPI runtime.
#include "framework/comm/mpi_runtime.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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

namespace {

std::string idle_wait_at_init;  // what MpiRuntime read after initializing MPI

// Open MPI's mpi_yield_when_idle through the MPI tool interface (Open MPI 4.1's MPI_T_init/finalize
// leak a few hundred bytes: MpiRuntime reads it once, never the test binaries, which init MPI
// themselves and run under LeakSanitizer).
std::string read_idle_wait() {
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return "";
  std::string mode;
  int index = 0, count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_T_cvar_handle handle = MPI_T_CVAR_HANDLE_NULL;
  if (MPI_T_cvar_get_index("mpi_yield_when_idle", &index) == MPI_SUCCESS &&
      MPI_T_cvar_get_info(index, nullptr, nullptr, nullptr, &type, nullptr, nullptr, nullptr, nullptr,
                          nullptr) == MPI_SUCCESS &&
      (type == MPI_C_BOOL || type == MPI_INT) &&
      MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS) {
    alignas(int) unsigned char value[sizeof(int)] = {};  // a C bool (Open MPI 4) or an int
    if (count == 1 && MPI_T_cvar_read(handle, value) == MPI_SUCCESS) {
      int as_int = 0;
      std::memcpy(&as_int, value, sizeof as_int);
      mode = (type == MPI_C_BOOL ? value[0] != 0 : as_int != 0) ? "yield" : "spin";
    }
    MPI_T_cvar_handle_free(&handle);
  }
  MPI_T_finalize();
  return mode;
}

}  // namespace

std::string mpi_idle_wait() { return idle_wait_at_init; }

MpiRuntime::MpiRuntime(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // A rank waiting in MPI (its gradient allreduce, for a slower rank) yields the CPU rather than
    // spin, unless the user chose otherwise. Spinning, the comm thread took the core from its own
    // rank's backward: a rank with 48 samples beside one with 80, each on its own core, measured
    // 0.64-0.96 of the other's compute time where its own is 0.6, and every policy reads those
    // times (docs/RESULTS.md §4). Open MPI reads OMPI_MCA_* at MPI_Init; it yields by itself
    // when oversubscribed; other MPI libraries ignore the variable.
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
      std::fprintf(stderr, "dynamix: fatal: MPI_Init_thread failed\n");
      std::exit(1);
    }
    owns_ = true;
    idle_wait_at_init = read_idle_wait();
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
