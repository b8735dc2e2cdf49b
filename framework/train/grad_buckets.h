// DYNAMIX — fused gradient buckets: pack every gradient scaled by w_i = b_i / B into flat
// buffers of ~bucket_mb, SUM-allreduce each bucket once, unpack. Parameters are bucketed in
// reverse registration order (the order backward produces them), as c10d's Reducer does.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "framework/comm/communicator.h"
#include "framework/comm/compression/codec.h"
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

class GradBuckets {
 public:
  // `codec` (optional) reduces float32 buckets (comm.compression); float64 buckets stay dense.
  GradBuckets(const std::vector<torch::Tensor>& params, double bucket_mb, Communicator& comm,
              std::unique_ptr<GradientCodec> codec = nullptr);

  // Weighted SUM allreduce of all gradients; missing gradients count as zeros.
  ReduceResult reduce(double weight);

  size_t num_buckets() const { return buckets_.size(); }
  size_t total_bytes() const;

 private:
  struct Bucket {
    torch::Tensor flat;           // contiguous buffer, dtype of its parameters
    std::vector<torch::Tensor> params;
    std::vector<size_t> offsets;  // element offset of each parameter
  };
  template <typename T>
  void reduce_bucket(Bucket& bucket, double weight, ReduceResult& out);

  Communicator& comm_;
  std::unique_ptr<GradientCodec> codec_;
  std::vector<Bucket> buckets_;
};

}  // namespace dynamix
