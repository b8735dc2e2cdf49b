// DYNAMIX — `dynamix bench allreduce`: nccl-tests-style columns for the DYNAMIX allreduce path
// (bucketed Communicator::allreduce_sum) and the full gradient path (pack+scale, allreduce,
// unpack over GradBuckets), each against one Communicator::allreduce_sum on a single pre-packed
// buffer of the same total size (one MPI_Allreduce or one ncclAllReduce).
//
// --device cuda puts the gradients (and so GradBuckets' buckets) on the node-local rank's GPU.
// With the nccl backend every buffer is device memory; with mpi the direct calls take host
// buffers and GradBuckets stages its device buckets through pinned host memory.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "framework/cli/commands.h"
#include "framework/cli/make_communicator.h"
#include "framework/comm/mpi_communicator.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/core/clock.h"
#include "framework/core/error.h"
#include "framework/train/device.h"
#include "framework/train/grad_buckets.h"

namespace dynamix {
namespace {

using Clock = std::chrono::steady_clock;

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

// Mean seconds per call over `iters`, after one warm-up call; every rank times the same window
// and the slowest rank's time is reported. Device work is waited for on both sides of the loop.
template <typename F>
double time_it(F&& f, int iters, const torch::Device& device) {
  f();
  synchronize(device);
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) f();
  synchronize(device);
  double t = seconds_since(t0) / iters;
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return t;
}

int64_t sum_over_ranks(int64_t v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return v;
}

// i % 7 as float32 on `device`: small integers, so sums over ranks are exact.
torch::Tensor pattern(int64_t count, const torch::Device& device) {
  return torch::arange(count, torch::TensorOptions().dtype(torch::kInt64).device(device))
      .remainder(7)
      .to(torch::kFloat32);
}

// `count` elements as `parts` gradient-carrying parameters of near-equal sizes.
std::vector<torch::Tensor> make_params(int64_t count, int parts, const torch::Device& device) {
  const int64_t n = std::max<int64_t>(1, std::min<int64_t>(parts, count));
  std::vector<torch::Tensor> params;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t size = count / n + (i < count % n ? 1 : 0);
    auto p = torch::zeros({size}, torch::TensorOptions().device(device).requires_grad(true));
    p.mutable_grad() = torch::zeros_like(p);
    params.push_back(p);
  }
  return params;
}

}  // namespace

int run_bench_allreduce(const BenchAllreduceCommand& cmd, int* argc, char*** argv) {
  MpiRuntime runtime(argc, argv);
  MpiCommunicator mpi;
  const int n = mpi.size(), rank = mpi.rank();
  // Device and backend as the trainer chooses them (train.device, backend).
  Config config;
  torch::Device grad_device(torch::kCPU);
  Backend backend = Backend::kMpi;
  std::string error;
  try {
    config.train.device = parse_choice<DeviceChoice>(cmd.device, "--device");
    config.backend = parse_choice<Backend>(cmd.backend, "--backend");
    grad_device = choose_device(config, runtime.local_rank());
  } catch (const std::exception& e) {
    error = e.what();
  }
  int failed = error.empty() ? 0 : 1;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (failed == 0) {
    const bool shared = ranks_share_a_gpu(mpi, grad_device);
    try {
      backend = choose_backend(config, grad_device, shared);
    } catch (const std::exception& e) {
      error = e.what();
    }
    failed = error.empty() ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  }
  if (failed != 0) {
    if (!error.empty()) {
      std::fprintf(
          stderr,
          "dynamix: error on rank %d: bench allreduce --device/--backend (as train.device/backend): %s\n",
          rank, error.c_str());
    }
    return 2;
  }
  try {
    // Collective; every rank throws if any rank cannot have its GPU.
    std::unique_ptr<Communicator> device_comm =
        make_device_communicator(backend, static_cast<int>(grad_device.index()));
    Communicator& comm = device_comm ? *device_comm : mpi;
    // Buffers handed to the communicator directly live where its backend takes them.
    const torch::Device comm_device =
        comm.reduces_device_buffers() ? grad_device : torch::Device(torch::kCPU);
    const size_t bucket_elems = static_cast<size_t>(cmd.bucket_mb * 1048576.0 / sizeof(float));
    if (rank == 0) {
      std::printf(
          "# dynamix bench allreduce: %d ranks, float32 SUM, bucket %.1f MB, backend %s, gradients on %s"
          " (%d tensors), direct buffers on %s\n",
          n, cmd.bucket_mb, comm.backend().c_str(), grad_device.str().c_str(), cmd.params,
          comm_device.str().c_str());
      std::printf(
          "# time: bucketed Communicator path; flat: one allreduce_sum on one buffer of the total size;"
          " ratio = flat/time (goal >= 0.95 at >= 1 MB)\n");
      std::printf(
          "# grad-path: pack+scale, allreduce, unpack through GradBuckets; g/flat = grad-path/flat"
          " (goal <= 1.05); #wrong, g#wrong: elements off the exact sum\n");
      std::printf("%12s %10s %10s %9s %9s %7s %10s %7s %13s %8s %8s\n", "size(B)", "count", "time(us)",
                  "algbw", "busbw", "#wrong", "flat(us)", "ratio", "grad-path(us)", "g/flat", "g#wrong");
    }
    for (int64_t bytes = cmd.min_bytes; bytes <= cmd.max_bytes; bytes *= 4) {
      const int64_t count = std::max<int64_t>(1, bytes / static_cast<int64_t>(sizeof(float)));
      const int iters =
          cmd.iters > 0 ? cmd.iters : static_cast<int>(std::clamp<int64_t>((256LL << 20) / bytes, 5, 200));
      const auto bucketed = [&](torch::Tensor& t) {
        auto* p = t.data_ptr<float>();
        const auto total = static_cast<size_t>(count);
        for (size_t done = 0; done < total; done += bucket_elems) {
          comm.allreduce_sum(p + done, std::min(bucket_elems, total - done), DType::kFloat32);
        }
      };

      // Correctness of the bucketed path: rank + i % 7 summed over ranks.
      torch::Tensor buf = pattern(count, comm_device).add_(rank);
      bucketed(buf);
      const torch::Tensor want = pattern(count, comm_device).mul_(n).add_(n * (n - 1) / 2);
      const int64_t wrong = sum_over_ranks(buf.ne(want).sum().item<int64_t>());

      torch::Tensor flat = torch::zeros({count}, torch::TensorOptions().device(comm_device));
      const double t_flat = time_it(
          [&] { comm.allreduce_sum(flat.data_ptr<float>(), static_cast<size_t>(count), DType::kFloat32); },
          iters, comm_device);
      const double t_dyn = time_it([&] { bucketed(buf); }, iters, comm_device);

      // Full gradient path over the same bytes. Correctness first: gradients (rank+1) * (i % 7)
      // with weights 1/(2n) sum to (n+1)/4 * (i % 7), up to float rounding of the weights (a weight
      // other than 1 makes a missing scale or unpack show at one rank too).
      auto params = make_params(count, cmd.params, grad_device);
      GradBuckets buckets(params, cmd.bucket_mb, comm);
      const torch::Tensor values = pattern(count, grad_device);
      int64_t offset = 0;
      for (auto& p : params) {
        p.mutable_grad().copy_(values.narrow(0, offset, p.numel()).mul(rank + 1));
        offset += p.numel();
      }
      buckets.reduce(0.5 / n);
      int64_t g_wrong = 0;
      offset = 0;
      for (auto& p : params) {
        const auto expect = values.narrow(0, offset, p.numel()).mul(0.25 * (n + 1));
        g_wrong += (p.grad() - expect).abs().gt(1e-5 * 7 * n).sum().item<int64_t>();
        offset += p.numel();
      }
      g_wrong = sum_over_ranks(g_wrong);
      const double t_grad = time_it([&] { buckets.reduce(1.0 / n); }, iters, grad_device);

      const double algbw = static_cast<double>(bytes) / t_dyn / 1e9;
      const double busbw = algbw * 2.0 * (n - 1) / n;
      if (rank == 0) {
        std::printf("%12lld %10lld %10.1f %9.3f %9.3f %7lld %10.1f %7.3f %13.1f %8.3f %8lld\n",
                    static_cast<long long>(bytes), static_cast<long long>(count), t_dyn * 1e6, algbw, busbw,
                    static_cast<long long>(wrong), t_flat * 1e6, t_flat / t_dyn, t_grad * 1e6,
                    t_grad / t_flat, static_cast<long long>(g_wrong));
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dynamix: error on rank %d: %s\n", rank, brief_error(e).c_str());
    return 2;
  }
  return 0;
}

}  // namespace dynamix
