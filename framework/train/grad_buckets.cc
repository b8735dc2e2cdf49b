// DYNAMIX — fused gradient buckets.
#include "framework/train/grad_buckets.h"

#include <chrono>
#include <type_traits>

#include "framework/core/error.h"

namespace dynamix {
namespace {

DType comm_dtype(torch::ScalarType t) {
  if (t == torch::kFloat32) return DType::kFloat32;
  if (t == torch::kFloat64) return DType::kFloat64;
  throw Error(std::string("gradient buckets support float32 and float64 parameters, got ") +
              c10::toString(t));
}

}  // namespace

GradBuckets::GradBuckets(const std::vector<torch::Tensor>& params, double bucket_mb, Communicator& comm,
                         std::unique_ptr<GradientCodec> codec)
    : comm_(comm), codec_(std::move(codec)) {
  const auto cap = static_cast<size_t>(bucket_mb * 1024.0 * 1024.0);
  // Reverse order: the last layers' gradients are ready first during backward.
  std::vector<torch::Tensor> pending;
  size_t pending_bytes = 0;
  auto flush = [&]() {
    if (pending.empty()) return;
    Bucket b;
    size_t off = 0;
    for (const auto& p : pending) {
      b.offsets.push_back(off);
      off += static_cast<size_t>(p.numel());
    }
    b.params = pending;
    b.flat = torch::empty({static_cast<int64_t>(off)}, pending.front().options().requires_grad(false));
    buckets_.push_back(std::move(b));
    pending.clear();
    pending_bytes = 0;
  };
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    const auto& p = *it;
    if (!p.requires_grad()) continue;
    comm_dtype(p.scalar_type());
    const size_t bytes = static_cast<size_t>(p.numel()) * p.element_size();
    if (!pending.empty() &&
        (pending.front().scalar_type() != p.scalar_type() || pending_bytes + bytes > cap)) {
      flush();
    }
    pending.push_back(p);
    pending_bytes += bytes;
  }
  flush();
}

size_t GradBuckets::total_bytes() const {
  size_t n = 0;
  for (const auto& b : buckets_) n += static_cast<size_t>(b.flat.numel()) * b.flat.element_size();
  return n;
}

template <typename T>
void GradBuckets::reduce_bucket(Bucket& bucket, double weight, ReduceResult& out) {
  std::vector<kernels::Segment<T>> segs(bucket.params.size());
  for (size_t k = 0; k < bucket.params.size(); ++k) {
    auto& p = bucket.params[k];
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    DYNAMIX_CHECK(p.grad().is_contiguous(), "gradient buckets need contiguous gradients");
    segs[k] = {p.grad().data_ptr<T>(), static_cast<size_t>(p.numel()), bucket.offsets[k]};
  }
  T* flat = bucket.flat.data_ptr<T>();
  out.local_sq_norm += kernels::pack_scale<T>(segs, static_cast<T>(weight), flat);
  const auto count = static_cast<size_t>(bucket.flat.numel());
  const auto t0 = std::chrono::steady_clock::now();
  if constexpr (std::is_same_v<T, float>) {
    if (codec_) {
      codec_->allreduce_sum(flat, count, comm_, &out.codec);
      out.wire_bytes += out.codec.bytes_sent;
    } else {
      comm_.allreduce_sum(flat, count, DType::kFloat32);
      out.wire_bytes += count * sizeof(T);
    }
  } else {
    comm_.allreduce_sum(flat, count, comm_dtype(bucket.flat.scalar_type()));
    out.wire_bytes += count * sizeof(T);
  }
  out.comm_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.global_sq_norm += kernels::unpack<T>(flat, segs);
  out.bytes += static_cast<size_t>(bucket.flat.numel()) * sizeof(T);
}

ReduceResult GradBuckets::reduce(double weight) {
  ReduceResult out;
  for (auto& b : buckets_) {
    if (b.flat.scalar_type() == torch::kFloat64) {
      reduce_bucket<double>(b, weight, out);
    } else {
      reduce_bucket<float>(b, weight, out);
    }
  }
  return out;
}

}  // namespace dynamix
