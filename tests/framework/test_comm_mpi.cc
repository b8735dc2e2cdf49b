// DYNAMIX — MPI communicator collectives (run under mpirun -np 4).
#include <gtest/gtest.h>
#include <mpi.h>

#include <numeric>

#include "framework/comm/mpi_communicator.h"
#include "framework/comm/watchdog.h"
#include "framework/core/error.h"
#include "kernels/hlc/half.h"

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
}

// 16-bit floats reduce through MpiCommunicator's own ops, also behind a wrapper (the watchdog's):
// the codecs rely on the interface alone (issue #17: fp16 / bf16 died under `dynamix train`).
void expect_half_collectives(Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  for (const bool bf16 : {false, true}) {
    const auto narrow = bf16 ? float_to_bf16 : float_to_fp16;
    const auto widen = bf16 ? bf16_to_float : fp16_to_float;
    const DType type = bf16 ? DType::kBFloat16 : DType::kFloat16;
    std::vector<uint16_t> h = {narrow(1.0f), narrow(0.5f * r), narrow(-2.0f)};
    comm.allreduce_sum(h.data(), h.size(), type);
    EXPECT_EQ(widen(h[0]), static_cast<float>(n)) << dtype_name(type);
    EXPECT_EQ(widen(h[1]), 0.25f * n * (n - 1)) << dtype_name(type);
    EXPECT_EQ(widen(h[2]), -2.0f * n) << dtype_name(type);
    uint16_t m = narrow(3.0f * r - 1.0f);
    comm.allreduce_max(&m, 1, type);
    EXPECT_EQ(widen(m), 3.0f * (n - 1) - 1.0f) << dtype_name(type);
  }
}

TEST(MpiCommunicator, HalfSumAndMax) {
  MpiCommunicator comm;
  EXPECT_FALSE(comm.reduces_device_buffers());
  expect_half_collectives(comm);
}

TEST(MpiCommunicator, HalfSumAndMaxBehindAWrapper) {
  MpiCommunicator mpi;
  WatchedCommunicator comm(mpi, nullptr);  // pass-through
  EXPECT_FALSE(comm.reduces_device_buffers());
  expect_half_collectives(comm);
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
