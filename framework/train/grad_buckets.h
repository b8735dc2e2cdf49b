// DYNAMIX — fused gradient buckets: pack every gradient scaled by w_i = b_i / B into flat
// buffers of ~bucket_mb, SUM-allreduce each bucket once, unpack. Parameters are bucketed in
// reverse registration order (the order backward produces them), as c10d's Reducer does.
//
// Two ways to drive it:
//  - reduce(): after backward, every bucket in turn (comm.overlap off, and `bench allreduce`);
//  - begin()/finish() with enable_overlap(): autograd hooks pack each gradient the moment backward
//    produces it, and a communication thread reduces each bucket as soon as it is full, in bucket
//    order on every rank, so communication hides under the rest of backward. After the first
//    step the buckets are rebuilt in the order gradients actually arrived (rank 0's order,
//    broadcast), with a small first bucket so the first allreduce starts early.
//
// Parameters on a CUDA device get their buckets on that device, packed and unpacked by the CUDA
// kernels (one launch per bucket). The NCCL backend reduces them in place; the MPI backend (and
// codecs that work on host memory) get them through a pinned host copy.
#pragma once

#include <torch/torch.h>

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "framework/comm/communicator.h"
#include "framework/comm/compression/codec.h"
#include "framework/train/device_pack.h"
#include "kernels/bucket_pack.h"

namespace dynamix {

struct ReduceResult {
  double local_sq_norm = 0;   // |g_i|^2 of the local (unscaled) mean gradient
  double global_sq_norm = 0;  // |g|^2 of the averaged gradient
  double comm_s = 0;          // wall time inside allreduce calls (straggler wait included)
  size_t bytes = 0;           // bytes of gradient reduced
  size_t wire_bytes = 0;      // payload handed to collectives (less than `bytes` when compressed)
  CodecStats codec;           // the last float32 bucket's codec statistics (compression on)
};

// Callbacks of the overlapped path (each optional).
struct OverlapHooks {
  // On the thread running backward, just before a full bucket is handed to the comm thread.
  std::function<void()> on_bucket_ready;
  // On the comm thread, after a bucket's collectives: the bytes it sent and the seconds it took.
  std::function<void(size_t wire_bytes, double comm_s)> after_bucket;
};

class GradBuckets {
 public:
  // `codec` (optional) reduces float32 buckets (comm.compression); float64 buckets stay dense.
  GradBuckets(const std::vector<torch::Tensor>& params, double bucket_mb, Communicator& comm,
              std::unique_ptr<GradientCodec> codec = nullptr);
  ~GradBuckets();
  GradBuckets(const GradBuckets&) = delete;
  GradBuckets& operator=(const GradBuckets&) = delete;

  // Weighted SUM allreduce of all gradients; missing gradients count as zeros.
  ReduceResult reduce(double weight);

  // Registers the autograd hooks and starts the comm thread. The communicator must allow calls
  // from that thread (MPI_THREAD_SERIALIZED): the caller makes no collective between begin() and
  // finish().
  void enable_overlap(OverlapHooks hooks);
  bool overlapped() const { return comm_thread_.joinable(); }
  // Arms the hooks for one step whose gradients get weight `weight`.
  void begin(double weight);
  // After backward (or instead of it: a rank with no samples, or one that ran out of memory):
  // packs the gradients backward did not produce as zeros, waits until every bucket is reduced
  // and, if `apply`, writes the averages into the parameters' .grad. Rethrows a comm failure.
  ReduceResult finish(bool apply);

  size_t num_buckets() const { return buckets_.size(); }
  size_t total_bytes() const;
  // Parameter indices (into the constructor's list) of each bucket, in bucket order.
  std::vector<std::vector<size_t>> layout() const;

 private:
  struct Bucket {
    torch::Tensor flat;           // contiguous buffer, dtype and device of its parameters
    torch::Tensor host;           // pinned host copy of a device bucket (MPI, host codecs)
    std::vector<size_t> members;  // parameter indices
    std::vector<size_t> offsets;  // element offset of each member
    size_t pending = 0;           // members not packed yet in this step (overlap)
  };
  struct Slot {
    size_t bucket = 0;
    size_t member = 0;
  };
  // Buckets from parameter indices in the order gradients are expected; the first bucket is
  // capped at `first_cap` bytes.
  void build(const std::vector<size_t>& order, size_t first_cap);
  template <typename T>
  void reduce_bucket(Bucket& bucket, double weight, ReduceResult& out);
  template <typename T>
  void pack_on_device(Bucket& bucket, double weight);
  // Collectives of one packed bucket (codec or dense); adds to comm_s, bytes, wire_bytes, codec.
  void allreduce_packed(Bucket& bucket, ReduceResult& out);
  // Whether a device bucket must go through its pinned host copy.
  bool needs_staging(const Bucket& bucket) const;
  size_t index_of(const Bucket& bucket) const { return static_cast<size_t>(&bucket - buckets_.data()); }
  // The bucket's members' .grad as segments (zeros created where a gradient is missing).
  template <typename T>
  std::vector<kernels::Segment<T>> grad_segments(Bucket& bucket);
  template <typename T>
  double unpack_bucket(Bucket& bucket);
  // Packs parameter `index`'s gradient (undefined = zeros) into its bucket slot.
  void pack_one(size_t index, const torch::Tensor& grad);
  void on_grad(size_t index, const torch::Tensor& grad);
  void mark_ready(size_t bucket);
  void comm_loop();
  void rebuild_from_arrival_order();

  std::vector<torch::Tensor> params_;
  size_t cap_ = 0;
  Communicator& comm_;
  std::unique_ptr<GradientCodec> codec_;
  std::unique_ptr<DevicePacker> device_;  // parameters on a CUDA device
  std::vector<Bucket> buckets_;
  std::vector<Slot> slot_of_;  // per parameter index (bucket == SIZE_MAX: no gradient)

  // Overlap state. The hooks run on the thread that runs backward; the comm thread reduces.
  OverlapHooks hooks_;
  std::vector<std::pair<size_t, unsigned>> hook_handles_;  // (parameter index, handle)
  bool armed_ = false;
  double weight_ = 0;
  double local_sq_ = 0;
  std::vector<char> packed_;     // per parameter, this step
  std::vector<size_t> arrival_;  // parameter indices in the order backward produced them
  bool rebuilt_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<char> ready_;  // per bucket, this step
  size_t next_ = 0;          // next bucket for the comm thread
  bool stop_ = false;
  ReduceResult comm_result_;
  std::exception_ptr comm_error_;
  std::thread comm_thread_;
};

}  // namespace dynamix
