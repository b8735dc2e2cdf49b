// DYNAMIX — allreduce codec benchmark: time and payload of dense float32 vs hlc / fp16 / bf16
// on random sparse gradients. Run: mpirun -np N bench_compression [elements] [iters] [densities...]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "framework/comm/compression/codec.h"
#include "framework/comm/mpi_communicator.h"
#include "framework/comm/mpi_runtime.h"

namespace dynamix {
namespace {

std::vector<float> sparse_grad(size_t n, double density, int rank) {
  std::mt19937 gen(1234 + rank);
  std::uniform_real_distribution<float> g(-1.0f, 1.0f);
  std::vector<float> out(n, 0.0f);
  const size_t nnz = static_cast<size_t>(density * static_cast<double>(n));
  for (size_t j = 0; j < nnz; ++j) out[gen() % n] = g(gen);
  return out;
}

struct Result {
  double seconds = 0.0;  // mean per call, slowest rank
  CodecStats stats;
};

Result run(GradientCodec* codec, const std::vector<float>& grad, int iters, MpiCommunicator& comm) {
  std::vector<float> buf;
  Result res;
  double total = 0.0;
  for (int it = -1; it < iters; ++it) {  // one warm-up call
    buf = grad;
    comm.barrier();
    const double t0 = MPI_Wtime();
    if (codec) {
      codec->allreduce_sum(buf.data(), buf.size(), comm, &res.stats);
    } else {
      comm.allreduce_sum(buf.data(), buf.size(), DType::kFloat32);
    }
    if (it >= 0) total += MPI_Wtime() - t0;
  }
  res.seconds = total / iters;
  MPI_Allreduce(MPI_IN_PLACE, &res.seconds, 1, MPI_DOUBLE, MPI_MAX, comm.comm());
  return res;
}

}  // namespace
}  // namespace dynamix

int main(int argc, char** argv) {
  using namespace dynamix;
  MpiRuntime mpi(&argc, &argv);
  MpiCommunicator comm;
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (size_t{1} << 22);
  const int iters = argc > 2 ? std::atoi(argv[2]) : 5;
  std::vector<double> densities;
  for (int a = 3; a < argc; ++a) densities.push_back(std::atof(argv[a]));
  if (densities.empty()) densities = {0.001, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5};

  CodecOptions forced;
  forced.hlc_auto = false;
  auto hlc = make_codec(Compression::kHlc, forced);
  auto hlc_auto = make_codec(Compression::kHlc);
  auto fp16 = make_codec(Compression::kFp16);
  auto bf16 = make_codec(Compression::kBf16);
  if (comm.rank() == 0) {
    std::printf("ranks %d, %zu float32 elements (%.1f MB), %d iterations\n", comm.size(), n, 4e-6 * n, iters);
    std::printf(
        "| density/rank | union | dense ms | hlc ms | hlc bytes / dense | peeled | fallback | auto path |"
        " auto ms | fp16 ms | bf16 ms |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  }
  for (double d : densities) {
    const std::vector<float> grad = sparse_grad(n, d, comm.rank());
    const Result dense = run(nullptr, grad, iters, comm);
    const Result h = run(hlc.get(), grad, iters, comm);
    const Result a = run(hlc_auto.get(), grad, iters, comm);
    const Result f = run(fp16.get(), grad, iters, comm);
    const Result b = run(bf16.get(), grad, iters, comm);
    if (comm.rank() == 0) {
      std::printf("| %.3g | %.4f | %.2f | %.2f | %.3f | %.4f | %zu | %s | %.2f | %.2f | %.2f |\n", d,
                  h.stats.union_density, 1e3 * dense.seconds, 1e3 * h.seconds,
                  static_cast<double>(h.stats.bytes_sent) / h.stats.dense_bytes, h.stats.peeled_fraction,
                  h.stats.fallback_count, a.stats.path.c_str(), 1e3 * a.seconds, 1e3 * f.seconds,
                  1e3 * b.seconds);
    }
  }
  return 0;
}
