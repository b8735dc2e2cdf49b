// DYNAMIX — `dynamix bench allreduce`: nccl-tests-style columns for the DYNAMIX allreduce path
// (bucketed Communicator::allreduce_sum) and the full gradient path (pack+scale, allreduce,
// unpack over GradBuckets), each against raw MPI_Allreduce on the same buffer.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "framework/cli/commands.h"
#include "framework/comm/mpi_communicator.h"
#include "framework/core/error.h"
#include "framework/core/mpi_runtime.h"
#include "framework/train/grad_buckets.h"

namespace dynamix {
namespace {

using Clock = std::chrono::steady_clock;

// Mean seconds per call over `iters`, synchronized so every rank times the same window.
template <typename F>
double time_it(F&& f, int iters, MPI_Comm comm) {
  f();  // warm-up
  MPI_Barrier(comm);
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) f();
  double t = std::chrono::duration<double>(Clock::now() - t0).count() / iters;
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
  return t;
}

}  // namespace

int run_bench_allreduce(const BenchAllreduceCommand& cmd, int* argc, char*** argv) {
  MpiRuntime runtime(argc, argv);
  MpiCommunicator comm;
  const int n = comm.size(), rank = comm.rank();
  const size_t bucket_elems = static_cast<size_t>(cmd.bucket_mb * 1048576.0 / sizeof(float));
  if (rank == 0) {
    std::printf("# dynamix bench allreduce: %d ranks, float32 SUM, bucket %.1f MB, backend mpi\n", n, cmd.bucket_mb);
    std::printf("# ratio = raw MPI_Allreduce time / DYNAMIX time (>= 0.95 is the goal at >= 1 MB)\n");
    std::printf("%12s %10s %10s %9s %9s %7s %10s %7s %12s %9s\n", "size(B)", "count", "time(us)", "algbw",
                "busbw", "#wrong", "raw(us)", "ratio", "grad-path(us)", "g-ratio");
  }
  for (int64_t bytes = cmd.min_bytes; bytes <= cmd.max_bytes; bytes *= 4) {
    const size_t count = static_cast<size_t>(bytes) / sizeof(float);
    std::vector<float> buf(count), raw(count);
    const int iters = cmd.iters > 0 ? cmd.iters
                                    : static_cast<int>(std::clamp<int64_t>((256LL << 20) / bytes, 5, 200));
    // Correctness: small integers sum exactly in float.
    for (size_t i = 0; i < count; ++i) buf[i] = static_cast<float>(i % 7 + rank);
    for (size_t done = 0; done < count; done += bucket_elems) {
      comm.allreduce_sum(buf.data() + done, std::min(bucket_elems, count - done), DType::kFloat32);
    }
    int64_t wrong = 0;
    const float ranks_sum = static_cast<float>(n * (n - 1) / 2);
    for (size_t i = 0; i < count; ++i) wrong += buf[i] != static_cast<float>(n * (i % 7)) + ranks_sum;
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);

    const double t_raw = time_it(
        [&] { MPI_Allreduce(MPI_IN_PLACE, raw.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
        iters, MPI_COMM_WORLD);
    const double t_dyn = time_it(
        [&] {
          for (size_t done = 0; done < count; done += bucket_elems) {
            comm.allreduce_sum(buf.data() + done, std::min(bucket_elems, count - done), DType::kFloat32);
          }
        },
        iters, MPI_COMM_WORLD);
    // Full gradient path: the same bytes as one parameter's gradient through GradBuckets.
    auto param = torch::zeros({static_cast<int64_t>(count)}, torch::requires_grad());
    param.mutable_grad() = torch::ones_like(param);
    GradBuckets buckets({param}, cmd.bucket_mb, comm);
    const double t_grad = time_it([&] { buckets.reduce(1.0 / n); }, iters, MPI_COMM_WORLD);

    const double algbw = static_cast<double>(bytes) / t_dyn / 1e9;
    const double busbw = algbw * 2.0 * (n - 1) / n;
    if (rank == 0) {
      std::printf("%12lld %10zu %10.1f %9.3f %9.3f %7lld %10.1f %7.3f %12.1f %9.3f\n",
                  static_cast<long long>(bytes), count, t_dyn * 1e6, algbw, busbw, static_cast<long long>(wrong),
                  t_raw * 1e6, t_raw / t_dyn, t_grad * 1e6, t_raw / t_grad);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace dynamix
