// DYNAMIX — hlc device path: HlcCodec::allreduce_sum on a bucket in CUDA memory, round for round as
// the host path in hlc_codec.cc, with the kernels of kernels/hlc/cuda/ in place of its CPU steps.
//
// What stays on the host: the automatic choice, the sketch layout (build_layout() from the support,
// copied to the device) and the merge of the gathered off-grid positions, as on the host path, so
// both paths take the same decisions from the same numbers. Kernels and copies run on the legacy
// default stream; the host waits for it only where it needs a number (head, support, off-grid
// counts and positions, fallback count) and, on non-NCCL backends, before handing a pinned copy of
// a device buffer to the collective.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "framework/comm/compression/hlc_codec.h"
#include "framework/comm/cuda_check.h"
#include "kernels/hlc/cuda/hlc_cuda.h"
#include "kernels/hlc/fixed_point.h"
#include "kernels/hlc/sketch.h"

namespace dynamix {
// Named, not anonymous: HlcCodec::Device holds these buffers, and an anonymous type in its fields is
// a -Wsubobject-linkage warning wherever a unity build includes this file.
namespace hlc_device {

// The trainer's gradients and LibTorch's kernels run on the legacy default stream; so do ours, and
// NcclCommunicator orders its collectives after it.
const cudaStream_t kStream = cudaStreamLegacy;

void sync() { DYNAMIX_CUDA_CHECK(cudaStreamSynchronize(kStream)); }

// Grow-only device array, kept between calls; contents do not survive growth. Growth by at least
// half keeps reallocation (cudaMalloc/cudaFree synchronize the device) rare as sparsity varies.
template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  ~DeviceArray() {
    if (ptr_ != nullptr) cudaFree(ptr_);  // errors ignored: at exit the runtime may be gone
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  // Never null: empty rounds still pass valid pointers to the kernels and memsets.
  T* reserve(size_t n) {
    n = std::max<size_t>(n, 1);
    if (n > capacity_) {
      const size_t want = std::max(n, capacity_ + capacity_ / 2);
      if (ptr_ != nullptr) {
        T* old = ptr_;
        ptr_ = nullptr;
        capacity_ = 0;
        DYNAMIX_CUDA_CHECK(cudaFree(old));
      }
      DYNAMIX_CUDA_CHECK(cudaMalloc(&ptr_, want * sizeof(T)));
      capacity_ = want;
    }
    return ptr_;
  }

 private:
  T* ptr_ = nullptr;
  size_t capacity_ = 0;
};

// Grow-only pinned host buffer: the staging copy of a collective on non-NCCL backends.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() {
    if (ptr_ != nullptr) cudaFreeHost(ptr_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* reserve(size_t bytes) {
    if (bytes > capacity_) {
      const size_t want = std::max(bytes, capacity_ + capacity_ / 2);
      if (ptr_ != nullptr) {
        sync();  // a copy back to the device may still read the old buffer
        void* old = ptr_;
        ptr_ = nullptr;
        capacity_ = 0;
        DYNAMIX_CUDA_CHECK(cudaFreeHost(old));
      }
      DYNAMIX_CUDA_CHECK(cudaMallocHost(&ptr_, want));
      capacity_ = want;
    }
    return ptr_;
  }

 private:
  void* ptr_ = nullptr;
  size_t capacity_ = 0;
};

template <typename T>
void to_device(T* device, const std::vector<T>& host) {
  if (host.empty()) return;
  // From pageable memory: returns once the source is staged, so `host` may go right after.
  DYNAMIX_CUDA_CHECK(
      cudaMemcpyAsync(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, kStream));
}

template <typename T>
void to_host(T* host, const T* device, size_t n) {
  if (n == 0) return;
  DYNAMIX_CUDA_CHECK(cudaMemcpyAsync(host, device, n * sizeof(T), cudaMemcpyDeviceToHost, kStream));
  sync();
}

}  // namespace hlc_device
using namespace hlc_device;  // NOLINT(google-build-using-namespace): this file's own buffers

// Buffers of the device path on one device, kept between calls.
struct HlcCodec::Device {
  explicit Device(int id) : id(id) {}
  int id;
  DeviceArray<int64_t> head, words, cells, fixed, sums, vals;
  DeviceArray<uint32_t> support, counter, cell, stuck, send, recv, off_grid;
  DeviceArray<uint8_t> negative, off_flags, recovered;
  DeviceArray<float> off_vals;
  PinnedBuffer staging;  // non-NCCL backends
};

void HlcCodec::release(Device* device) {
  if (device == nullptr) return;
  // The last call's copy back out of the pinned buffer may still be pending. Errors are ignored:
  // at exit the runtime may already be gone.
  int previous = -1;
  if (cudaGetDevice(&previous) == cudaSuccess && cudaSetDevice(device->id) == cudaSuccess) {
    cudaStreamSynchronize(kStream);
    if (previous != device->id) cudaSetDevice(previous);
  }
  delete device;
}

namespace {

// The collectives of one call on device buffers, counted in the stats as the host path counts them.
// nccl: the device buffer itself; NcclCommunicator orders it after the legacy default stream, and
// join_device_collectives() orders the stream after it (each round reads the previous one's
// result, also while the trainer defers joins during backward). Other backends: a pinned host copy
// of it, reduced there, copied back where the device needs it.
class DeviceRounds {
 public:
  DeviceRounds(Communicator& comm, PinnedBuffer& staging, CodecStats* stats)
      : comm_(comm), staging_(staging), stats_(stats), nccl_(comm.reduces_device_buffers()) {}

  // In-place SUM of `count` elements at `device`. The last `tail` elements of the result are also
  // copied to `host_tail`; `device_reads` says whether kernels read the result afterwards.
  void sum(void* device, size_t count, DType dtype, bool device_reads, void* host_tail = nullptr,
           size_t tail = 0) {
    const size_t size = dtype_size(dtype);
    const size_t bytes = count * size;
    const size_t tail_offset = (count - tail) * size;
    if (nccl_) {
      comm_.allreduce_sum(device, count, dtype);
      comm_.join_device_collectives();  // the next step reads the result, also under deferred joins
      if (tail > 0)
        to_host(static_cast<char*>(host_tail), static_cast<const char*>(device) + tail_offset, tail * size);
    } else {
      // The copy in waits, in stream order, for the previous round's copy back out of the buffer.
      char* host = static_cast<char*>(staging_.reserve(bytes));
      to_host(host, static_cast<const char*>(device), bytes);
      comm_.allreduce_sum(host, count, dtype);
      if (device_reads) {
        DYNAMIX_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, kStream));
      }
      if (tail > 0) std::memcpy(host_tail, host + tail_offset, tail * size);
    }
    stats_->bytes_sent += bytes;
    ++stats_->rounds;
  }

  // Allgather of `bytes` from `send` (device) into `all` (host, size() * bytes); `recv` is device
  // room for the NCCL result.
  void allgather(const void* send, size_t bytes, void* recv, void* all) {
    if (nccl_) {
      comm_.allgather(send, bytes, recv);
      comm_.join_device_collectives();
      to_host(static_cast<char*>(all), static_cast<const char*>(recv), bytes * comm_.size());
    } else {
      char* host = static_cast<char*>(staging_.reserve(bytes));
      to_host(host, static_cast<const char*>(send), bytes);
      comm_.allgather(host, bytes, all);
    }
    stats_->bytes_sent += bytes;
    ++stats_->rounds;
  }

 private:
  Communicator& comm_;
  PinnedBuffer& staging_;
  CodecStats* stats_;
  bool nccl_;
};

}  // namespace

bool HlcCodec::is_device_memory(const void* data, int* device) {
  // Without a driver or a device every pointer is host memory; ask the runtime once.
  static const bool have_device = [] {
    int devices = 0;
    const cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess) cudaGetLastError();  // clear it: no CUDA means host memory to us
    return e == cudaSuccess && devices > 0;
  }();
  if (!have_device) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, data) != cudaSuccess) {
    cudaGetLastError();  // an unknown pointer is host memory, as NcclCommunicator treats it
    return false;
  }
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged) return false;
  *device = attributes.device;
  return true;
}

void HlcCodec::allreduce_sum_device(float* data, size_t count, int device, Communicator& comm,
                                    CodecStats* stats) {
  CudaDeviceGuard guard(device);
  if (!device_ || device_->id != device) device_.reset(new Device(device));
  Device& d = *device_;
  DeviceRounds rounds(comm, d.staging, stats);
  const int ranks = comm.size();
  const int rank = comm.rank();
  const size_t nranks = static_cast<size_t>(ranks);

  // Round 1: this rank's slots of the head, the others zero.
  int64_t* head = d.head.reserve(2 * nranks);
  DYNAMIX_CUDA_CHECK(cudaMemsetAsync(head, 0, 2 * nranks * sizeof(int64_t), kStream));
  DYNAMIX_CUDA_CHECK(hlc_cuda_head(data, count, head + 2 * rank, kStream));
  std::vector<int64_t> head_host(2 * nranks);
  rounds.sum(head, 2 * nranks, DType::kInt64, false, head_host.data(), 2 * nranks);
  size_t max_nnz = 0;
  float max_abs = 0.0f;
  hlc_detail::read_head(head_host.data(), ranks, &max_nnz, &max_abs);
  stats->union_count = max_nnz;  // a lower bound until the union is known
  stats->union_density = static_cast<double>(max_nnz) / static_cast<double>(count);
  if (dense_after_head(count, ranks, max_nnz)) {
    rounds.sum(data, count, DType::kFloat32, true);
    stats->path = "dense";
    return;
  }

  // Round 2: union of supports; the support goes to the host for the layout.
  const size_t nwords = union_words(count, ranks);
  int64_t* words = d.words.reserve(nwords);
  DYNAMIX_CUDA_CHECK(hlc_cuda_pack_nonzero(data, count, ranks, words, kStream));
  rounds.sum(words, nwords, DType::kInt64, true);
  DYNAMIX_CHECK(count <= UINT32_MAX,
                "hlc: bucket of " + std::to_string(count) + " elements exceeds 2^32");  // as unpack_support
  uint32_t* support = d.support.reserve(count);
  uint32_t* counter = d.counter.reserve(1);
  DYNAMIX_CUDA_CHECK(hlc_cuda_unpack_support(words, count, ranks, support, counter, kStream));
  uint32_t num = 0;
  to_host(&num, counter, 1);
  const size_t entries = num;
  std::vector<uint32_t> support_host(entries);
  to_host(support_host.data(), support, entries);
  stats->union_count = entries;
  stats->union_density = static_cast<double>(entries) / static_cast<double>(count);
  if (dense_after_union(count, ranks, sketch_cells(support_host, options_.hlc_ratio))) {
    rounds.sum(data, count, DType::kFloat32, true);
    stats->path = "dense";
    return;
  }

  // Round 3: the sketch of this rank's values in fixed point, plus its off-grid count.
  const SketchLayout layout = build_layout(support_host, options_.hlc_ratio, options_.hlc_seed);
  const int scale =
      fixed_scale(max_abs, static_cast<uint64_t>(ranks) * std::max<uint32_t>(1, layout.max_load));
  uint32_t* cell = d.cell.reserve(layout.cell.size());
  uint8_t* negative = d.negative.reserve(entries);
  to_device(cell, layout.cell);
  to_device(negative, layout.negative);
  int64_t* cells = d.cells.reserve(layout.cells + nranks);
  int64_t* fixed = d.fixed.reserve(entries);  // this rank's fixed-point values, 0 where zero or off grid
  uint8_t* off_flags = d.off_flags.reserve(entries);
  DYNAMIX_CUDA_CHECK(cudaMemsetAsync(cells, 0, (layout.cells + nranks) * sizeof(int64_t), kStream));
  DYNAMIX_CUDA_CHECK(hlc_cuda_encode(data, support, entries, cell, negative, scale, cells, fixed, off_flags,
                                     cells + layout.cells + rank, kStream));
  std::vector<int64_t> off_counts(nranks);
  rounds.sum(cells, layout.cells + nranks, DType::kInt64, true, off_counts.data(), nranks);
  int64_t off_grid_total = 0;
  for (int r = 0; r < ranks; ++r) off_grid_total += off_counts[r];

  int64_t* sums = d.sums.reserve(entries);
  uint8_t* recovered = d.recovered.reserve(entries);
  DYNAMIX_CUDA_CHECK(cudaMemsetAsync(sums, 0, entries * sizeof(int64_t), kStream));  // peel skips the rest
  size_t peeled = 0;
  DYNAMIX_CUDA_CHECK(
      hlc_cuda_peel(cell, negative, entries, layout.cells, cells, sums, recovered, &peeled, kStream));
  stats->peeled_fraction = entries ? static_cast<double>(peeled) / static_cast<double>(entries) : 1.0;

  // Round 4: off-grid positions of all ranks; their entries leave the integer fallback (mark 2).
  std::vector<uint32_t> off_grid;
  uint32_t* off_grid_dev = nullptr;
  if (off_grid_total > 0) {
    const size_t widest = static_cast<size_t>(*std::max_element(off_counts.begin(), off_counts.end()));
    const size_t mine = static_cast<size_t>(off_counts[rank]);
    uint32_t* send = d.send.reserve(widest);
    // In support order, so ascending, as the host path collects them; padded with UINT32_MAX.
    DYNAMIX_CUDA_CHECK(hlc_cuda_select(off_flags, 1, entries, support, send, counter, kStream));
    DYNAMIX_CUDA_CHECK(cudaMemsetAsync(send + mine, 0xff, (widest - mine) * sizeof(uint32_t), kStream));
    std::vector<uint32_t> all(widest * nranks);
    uint32_t* recv = comm.reduces_device_buffers() ? d.recv.reserve(widest * nranks) : nullptr;
    rounds.allgather(send, widest * sizeof(uint32_t), recv, all.data());
    off_grid = hlc_detail::merge_positions(std::move(all));
    off_grid_dev = d.off_grid.reserve(off_grid.size());
    to_device(off_grid_dev, off_grid);
    DYNAMIX_CUDA_CHECK(
        hlc_cuda_mark_positions(support, entries, off_grid_dev, off_grid.size(), 2, recovered, kStream));
  }
  stats->off_grid_count = off_grid.size();

  // Round 5: entries that did not peel, summed exactly in the same fixed point, in support order.
  uint32_t* stuck = d.stuck.reserve(entries);
  size_t n_stuck = entries - peeled;  // without off-grid marks, recovered is 1 exactly where peeled
  if (!off_grid.empty()) {
    DYNAMIX_CUDA_CHECK(hlc_cuda_select(recovered, 0, entries, nullptr, stuck, counter, kStream));
    to_host(&num, counter, 1);
    n_stuck = num;
  } else if (n_stuck > 0) {
    DYNAMIX_CUDA_CHECK(hlc_cuda_select(recovered, 0, entries, nullptr, stuck, counter, kStream));
  }
  if (n_stuck > 0) {
    int64_t* vals = d.vals.reserve(n_stuck);
    DYNAMIX_CUDA_CHECK(hlc_cuda_gather(fixed, stuck, n_stuck, vals, kStream));
    rounds.sum(vals, n_stuck, DType::kInt64, true);
    DYNAMIX_CUDA_CHECK(hlc_cuda_scatter(vals, stuck, n_stuck, sums, kStream));
  }
  stats->fallback_count = n_stuck + off_grid.size();

  // Round 6: off-grid positions as a dense float SUM (the full value of every rank there).
  float* off_vals = nullptr;
  if (!off_grid.empty()) {
    off_vals = d.off_vals.reserve(off_grid.size());
    DYNAMIX_CUDA_CHECK(hlc_cuda_gather(data, off_grid_dev, off_grid.size(), off_vals, kStream));
    rounds.sum(off_vals, off_grid.size(), DType::kFloat32, true);
  }

  // Scatter: zero outside the union (+0 on every rank), one rounding per grid entry.
  DYNAMIX_CUDA_CHECK(hlc_cuda_dequantize(support, sums, entries, scale, off_grid_dev, off_vals,
                                         off_grid.size(), data, count, kStream));
}

}  // namespace dynamix
