// DYNAMIX — MPI communicator collectives (run under mpirun -np 4).
#include <gtest/gtest.h>
#include <mpi.h>

#include <numeric>

#include "framework/comm/mpi_communicator.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

TEST(MpiCommunicator, AllreduceSumAndMax) {
  MpiCommunicator comm;
  const int n = comm.size(), r = comm.rank();
  std::vector<double> d = {1.0 * r, 2.0, -1.0 * r};
  comm.allreduce_sum(d.data(), d.size(), DType::kFloat64);
  EXPECT_DOUBLE_EQ(d[0], n * (n - 1) / 2.0);
  EXPECT_DOUBLE_EQ(d[1], 2.0 * n);
  std::vector<float> f(1000, 0.5f * (r + 1));
  comm.allreduce_sum(f.data(), f.size(), DType::kFloat32);
  EXPECT_FLOAT_EQ(f[999], 0.5f * n * (n + 1) / 2);
  int64_t m = 10 * r;
  comm.allreduce_max(&m, 1, DType::kInt64);
  EXPECT_EQ(m, 10 * (n - 1));
  std::vector<uint16_t> half(4);
  EXPECT_THROW(comm.allreduce_sum(half.data(), half.size(), DType::kFloat16), Error);
}

TEST(MpiCommunicator, BroadcastGatherAllgather) {
  MpiCommunicator comm;
  const int n = comm.size(), r = comm.rank();
  std::vector<int32_t> plan = {r, r, r};
  comm.broadcast(plan.data(), plan.size(), DType::kInt32, n - 1);
  EXPECT_EQ(plan, std::vector<int32_t>(3, n - 1));
  struct Rec {
    int32_t rank;
    double value;
  } mine{r, r * 1.5};
  std::vector<Rec> all(static_cast<size_t>(n));
  comm.gather(&mine, sizeof(Rec), r == 0 ? all.data() : nullptr, 0);
  if (r == 0) {
    for (int i = 0; i < n; ++i) EXPECT_DOUBLE_EQ(all[i].value, i * 1.5);
  }
  std::vector<int> flags(static_cast<size_t>(n));
  const int f = r % 2;
  comm.allgather(&f, sizeof(int), flags.data());
  for (int i = 0; i < n; ++i) EXPECT_EQ(flags[i], i % 2);
}

}  // namespace
}  // namespace dynamix

