// DYNAMIX — main() for GoogleTest binaries run under mpirun: rank 0 prints, all ranks agree on
// the exit code (any failing rank fails the test; a run that selects no test fails too).
#include <gtest/gtest.h>
#include <mpi.h>

#include "tests/mpi_leak_check.h"

int main(int argc, char** argv) {
  {
    dynamix::test::IgnoreLeaksOfMpiInit ignore;
    int provided = 0;  // as the trainer asks: the gradient comm thread calls MPI during backward
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) delete listeners.Release(listeners.default_result_printer());
  int rc = RUN_ALL_TESTS();
  if (::testing::UnitTest::GetInstance()->test_to_run_count() == 0) {  // a filter that names no test
    if (rank == 0) std::fprintf(stderr, "no test matches this run's --gtest_filter\n");
    rc = 1;
  }
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rc != 0 && rank != 0) std::fprintf(stderr, "rank %d: tests failed\n", rank);
  dynamix::test::check_leaks_before_mpi_finalize();
  MPI_Finalize();
  return worst;
}
