// DYNAMIX — fused gradient buckets.
#include "framework/train/grad_buckets.h"

#include <chrono>
#include <limits>
#include <tuple>
#include <type_traits>

#include "framework/core/clock.h"
#include "framework/core/error.h"
#include "framework/train/device.h"

namespace dynamix {
namespace {

constexpr size_t kNoBucket = std::numeric_limits<size_t>::max();
constexpr size_t kFirstBucketBytes = 1 << 20;  // overlap: the first allreduce starts after 1 MB

DType comm_dtype(torch::ScalarType t) {
  if (t == torch::kFloat32) return DType::kFloat32;
  if (t == torch::kFloat64) return DType::kFloat64;
  throw Error(std::string("gradient buckets support float32 and float64 parameters, got ") +
              c10::toString(t));
}

// Whether two tensors of one shape put every element at the same memory offset: both dense
// without overlap, equal strides in every dimension longer than 1. (A size-1 dimension's stride
// never matters; for a 1x1 convolution under channels_last, cuDNN's weight gradient and the
// weight itself may differ in exactly those, and AccumulateGrad keeps such a gradient.)
bool same_memory_order(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.sizes() != b.sizes() || !a.is_non_overlapping_and_dense() || !b.is_non_overlapping_and_dense()) {
    return false;
  }
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (a.size(d) > 1 && a.stride(d) != b.stride(d)) return false;
  }
  return true;
}

// The gradient's elements in the parameter's memory order (what unpack writes back into .grad,
// which AccumulateGrad lays out like the parameter).
torch::Tensor in_param_layout(const torch::Tensor& grad, const torch::Tensor& param) {
  DYNAMIX_CHECK(grad.scalar_type() == param.scalar_type() && grad.sizes() == param.sizes(),
                "gradient buckets: a gradient differs from its parameter in dtype or shape");
  if (same_memory_order(grad, param)) return grad;
  return torch::empty_like(param).copy_(grad);
}

// Packs one gradient (undefined = zeros) scaled by `weight` at `offset` of `flat`; returns its
// squared norm.
template <typename T>
double pack_segment(const torch::Tensor& grad, size_t count, size_t offset, double weight,
                    torch::Tensor& flat) {
  const kernels::Segment<T> seg{grad.defined() ? grad.data_ptr<T>() : nullptr, count, offset};
  return kernels::pack_scale<T>({seg}, static_cast<T>(weight), flat.data_ptr<T>());
}

}  // namespace

GradBuckets::GradBuckets(const std::vector<torch::Tensor>& params, double bucket_mb, Communicator& comm,
                         std::unique_ptr<GradientCodec> codec)
    : params_(params),
      cap_(static_cast<size_t>(bucket_mb * 1024.0 * 1024.0)),
      comm_(comm),
      codec_(std::move(codec)) {
  if (!params_.empty() && params_.front().is_cuda()) {
    const torch::Device device = params_.front().device();
    for (const auto& p : params_) {
      DYNAMIX_CHECK(p.device() == device, "gradient buckets: parameters on " + device.str() + " and " +
                                              p.device().str() + "; a replica must live on one device");
    }
    device_ = std::make_unique<DevicePacker>(device);
  }
  // Reverse order: the last layers' gradients are ready first during backward.
  std::vector<size_t> order;
  for (size_t i = params_.size(); i-- > 0;) {
    if (params_[i].requires_grad()) order.push_back(i);
  }
  build(order, cap_);
}

GradBuckets::~GradBuckets() {
  if (comm_thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    comm_thread_.join();
  }
  for (const auto& [index, handle] : hook_handles_) params_[index].remove_hook(handle);
}

void GradBuckets::build(const std::vector<size_t>& order, size_t first_cap) {
  buckets_.clear();
  slot_of_.assign(params_.size(), Slot{kNoBucket, 0});
  std::vector<size_t> pending;
  size_t pending_bytes = 0;
  auto flush = [&]() {
    if (pending.empty()) return;
    Bucket b;
    size_t off = 0;
    for (size_t i : pending) {
      slot_of_[i] = Slot{buckets_.size(), b.members.size()};
      b.members.push_back(i);
      b.offsets.push_back(off);
      off += static_cast<size_t>(params_[i].numel());
    }
    b.flat =
        torch::empty({static_cast<int64_t>(off)}, params_[pending.front()].options().requires_grad(false));
    buckets_.push_back(std::move(b));
    pending.clear();
    pending_bytes = 0;
  };
  for (size_t i : order) {
    const auto& p = params_[i];
    comm_dtype(p.scalar_type());
    const size_t bytes = static_cast<size_t>(p.numel()) * p.element_size();
    const size_t cap = buckets_.empty() ? first_cap : cap_;
    if (!pending.empty() &&
        (params_[pending.front()].scalar_type() != p.scalar_type() || pending_bytes + bytes > cap)) {
      flush();
    }
    pending.push_back(i);
    pending_bytes += bytes;
  }
  flush();
}

size_t GradBuckets::total_bytes() const {
  size_t n = 0;
  for (const auto& b : buckets_) n += static_cast<size_t>(b.flat.numel()) * b.flat.element_size();
  return n;
}

std::vector<std::vector<size_t>> GradBuckets::layout() const {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : buckets_) out.push_back(b.members);
  return out;
}

bool GradBuckets::needs_staging(const Bucket& bucket) const {
  if (!bucket.flat.is_cuda()) return false;
  if (bucket.flat.scalar_type() == torch::kFloat32 && codec_) return !codec_->accepts_device_memory();
  return !comm_.reduces_device_buffers();
}

void GradBuckets::allreduce_packed(Bucket& bucket, ReduceResult& out) {
  const auto count = static_cast<size_t>(bucket.flat.numel());
  if (comm_.size() == 1 && !comm_.reduces_device_buffers()) {  // one rank's sum is the buffer (loss scaling)
    out.bytes += count * bucket.flat.element_size();
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const bool staged = needs_staging(bucket);
  torch::Tensor& buffer = staged ? bucket.host : bucket.flat;
  if (staged) {
    if (!bucket.host.defined()) {
      bucket.host =
          torch::empty(bucket.flat.sizes(), bucket.flat.options().device(torch::kCPU).pinned_memory(true));
    }
    bucket.host.copy_(bucket.flat);  // waits for the packing kernels queued before it
  }
  if (buffer.scalar_type() == torch::kFloat32 && codec_) {
    codec_->allreduce_sum(buffer.data_ptr<float>(), count, comm_, &out.codec);
    out.wire_bytes += out.codec.bytes_sent;
  } else {
    comm_.allreduce_sum(buffer.data_ptr(), count, comm_dtype(buffer.scalar_type()));
    out.wire_bytes += count * buffer.element_size();
  }
  if (staged) bucket.flat.copy_(bucket.host);
  out.comm_s += seconds_since(t0);
  out.bytes += count * bucket.flat.element_size();
}

template <typename T>
std::vector<kernels::Segment<T>> GradBuckets::grad_segments(Bucket& bucket) {
  std::vector<kernels::Segment<T>> segs(bucket.members.size());
  for (size_t k = 0; k < bucket.members.size(); ++k) {
    auto& p = params_[bucket.members[k]];
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    DYNAMIX_CHECK(same_memory_order(p.grad(), p),
                  "gradient buckets need gradients laid out like their parameters");
    segs[k] = {p.grad().data_ptr<T>(), static_cast<size_t>(p.numel()), bucket.offsets[k]};
  }
  return segs;
}

template <typename T>
double GradBuckets::unpack_bucket(Bucket& bucket) {
  if (device_) {
    device_->unpack<T>(index_of(bucket), bucket.flat.data_ptr<T>(), grad_segments<T>(bucket));
    return 0;  // accumulated on the device; read by device_->norms()
  }
  return kernels::unpack<T>(bucket.flat.data_ptr<T>(), grad_segments<T>(bucket));
}

template <typename T>
void GradBuckets::reduce_bucket(Bucket& bucket, double weight, ReduceResult& out) {
  const auto segs = grad_segments<T>(bucket);
  out.local_sq_norm += kernels::pack_scale<T>(segs, static_cast<T>(weight), bucket.flat.data_ptr<T>());
  allreduce_packed(bucket, out);
  out.global_sq_norm += kernels::unpack<T>(bucket.flat.data_ptr<T>(), segs);
}

template <typename T>
void GradBuckets::pack_on_device(Bucket& bucket, double weight) {
  device_->pack<T>(index_of(bucket), grad_segments<T>(bucket), static_cast<T>(weight),
                   bucket.flat.data_ptr<T>());
}

ReduceResult GradBuckets::reduce(double weight) {
  DYNAMIX_CHECK(!armed_, "gradient buckets: reduce() during an overlapped step");
  ReduceResult out;
  if (!device_) {
    for (auto& b : buckets_) {
      if (b.flat.scalar_type() == torch::kFloat64) {
        reduce_bucket<double>(b, weight, out);
      } else {
        reduce_bucket<float>(b, weight, out);
      }
    }
    return out;
  }
  // On a GPU every bucket is packed and its collective issued before anything is unpacked, so
  // that with NCCL the compute stream packs bucket k+1 while bucket k is reduced; one join, then
  // the unpacks.
  device_->begin();
  comm_.set_deferred_join(true);
  try {
    for (auto& b : buckets_) {
      if (b.flat.scalar_type() == torch::kFloat64) {
        pack_on_device<double>(b, weight);
      } else {
        pack_on_device<float>(b, weight);
      }
      allreduce_packed(b, out);
    }
  } catch (...) {
    comm_.set_deferred_join(false);
    throw;
  }
  comm_.set_deferred_join(false);
  comm_.join_device_collectives();
  for (auto& b : buckets_) {
    if (b.flat.scalar_type() == torch::kFloat64) {
      unpack_bucket<double>(b);
    } else {
      unpack_bucket<float>(b);
    }
  }
  std::tie(out.local_sq_norm, out.global_sq_norm) = device_->norms();
  return out;
}

// --- Overlapped path -----------------------------------------------------------------------

void GradBuckets::enable_overlap(OverlapHooks hooks) {
  DYNAMIX_CHECK(!overlapped(), "gradient buckets: overlap enabled twice");
  hooks_ = std::move(hooks);
  packed_.assign(params_.size(), 0);
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].requires_grad()) continue;
    // A leaf's hook sees its whole gradient for this backward (all uses summed), before
    // AccumulateGrad stores it.
    hook_handles_.emplace_back(
        i, params_[i].register_hook([this, i](const torch::Tensor& grad) { on_grad(i, grad); }));
  }
  // The small first bucket applies from the rebuild on; the comm thread starts idle.
  comm_thread_ = std::thread([this] { comm_loop(); });
}

void GradBuckets::begin(double weight) {
  DYNAMIX_CHECK(overlapped(), "gradient buckets: begin() without enable_overlap()");
  DYNAMIX_CHECK(!armed_, "gradient buckets: begin() twice without finish()");
  weight_ = weight;
  local_sq_ = 0;
  std::fill(packed_.begin(), packed_.end(), 0);
  for (auto& b : buckets_) b.pending = b.members.size();
  if (device_) {
    device_->begin();
    comm_.set_deferred_join(true);  // backward goes on while buckets are reduced
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.assign(buckets_.size(), 0);
    next_ = 0;
    comm_result_ = ReduceResult{};
    comm_error_ = nullptr;
  }
  armed_ = true;
}

void GradBuckets::pack_one(size_t index, const torch::Tensor& grad) {
  const Slot s = slot_of_[index];
  Bucket& b = buckets_[s.bucket];
  const auto& p = params_[index];
  const size_t n = static_cast<size_t>(p.numel());
  const torch::Tensor g = grad.defined() ? in_param_layout(grad, p) : torch::Tensor();
  const size_t offset = b.offsets[s.member];
  if (device_) {
    if (g.defined()) {
      const int64_t at = b.flat.storage_offset() + static_cast<int64_t>(offset);
      device_->pack_one(g, weight_, b.flat.as_strided(g.sizes(), g.strides(), at));
    } else {
      b.flat.narrow(0, static_cast<int64_t>(offset), static_cast<int64_t>(n)).zero_();
    }
  } else {
    local_sq_ += b.flat.scalar_type() == torch::kFloat64 ? pack_segment<double>(g, n, offset, weight_, b.flat)
                                                         : pack_segment<float>(g, n, offset, weight_, b.flat);
  }
  packed_[index] = 1;
  if (--b.pending == 0) mark_ready(s.bucket);
}

void GradBuckets::on_grad(size_t index, const torch::Tensor& grad) {
  if (!armed_) return;  // a backward outside a training step (none in the trainer)
  DYNAMIX_CHECK(!packed_[index],
                "gradient buckets: a parameter received two gradients in one step "
                "(more than one backward per step needs comm.overlap: false)");
  if (!rebuilt_) arrival_.push_back(index);
  pack_one(index, grad);
}

void GradBuckets::mark_ready(size_t bucket) {
  if (hooks_.on_bucket_ready) hooks_.on_bucket_ready();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_[bucket] = 1;
  }
  cv_.notify_all();
}

void GradBuckets::comm_loop() {
  if (device_) make_device_current(params_.front().device());
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || (next_ < ready_.size() && ready_[next_]); });
    if (stop_) return;
    Bucket& b = buckets_[next_];
    lock.unlock();
    // Buckets go out strictly in index order, so every rank issues the same collectives in the
    // same order whatever order its gradients arrived in.
    ReduceResult part;
    std::exception_ptr error;
    try {
      allreduce_packed(b, part);
      if (hooks_.after_bucket) hooks_.after_bucket(part.wire_bytes, part.comm_s);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    comm_result_.comm_s += part.comm_s;
    comm_result_.bytes += part.bytes;
    comm_result_.wire_bytes += part.wire_bytes;
    if (b.flat.scalar_type() == torch::kFloat32 && codec_) comm_result_.codec = part.codec;
    if (error) {
      comm_error_ = error;
      next_ = ready_.size();  // give up this step; finish() rethrows
    } else {
      ++next_;
    }
    if (next_ == ready_.size()) cv_.notify_all();
  }
}

ReduceResult GradBuckets::finish(bool apply) {
  DYNAMIX_CHECK(armed_, "gradient buckets: finish() without begin()");
  for (size_t i = 0; i < params_.size(); ++i) {
    if (slot_of_[i].bucket != kNoBucket && !packed_[i]) pack_one(i, torch::Tensor());
  }
  armed_ = false;
  ReduceResult out;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return next_ == ready_.size(); });
    if (device_) {
      // Later work on the compute stream (unpack, optimizer) after every bucket's collective.
      comm_.set_deferred_join(false);
      if (!comm_error_) comm_.join_device_collectives();
    }
    if (comm_error_) std::rethrow_exception(comm_error_);
    out = comm_result_;
  }
  out.local_sq_norm = local_sq_;
  if (apply) {
    for (auto& b : buckets_) {
      out.global_sq_norm +=
          b.flat.scalar_type() == torch::kFloat64 ? unpack_bucket<double>(b) : unpack_bucket<float>(b);
    }
  }
  if (device_) std::tie(out.local_sq_norm, out.global_sq_norm) = device_->norms();
  if (!rebuilt_) rebuild_from_arrival_order();
  return out;
}

void GradBuckets::rebuild_from_arrival_order() {
  // Rank 0's arrival order for everyone (ranks must agree on the layout; a rank that had no
  // samples saw no arrivals), completed with the parameters that never produced a gradient.
  const size_t n = params_.size();
  std::vector<int32_t> order(n, -1);
  if (comm_.rank() == 0) {
    std::vector<char> seen(n, 0);
    size_t k = 0;
    for (size_t i : arrival_) {
      order[k++] = static_cast<int32_t>(i);
      seen[i] = 1;
    }
    for (const auto& b : buckets_) {
      for (size_t i : b.members) {
        if (!seen[i]) order[k++] = static_cast<int32_t>(i);
      }
    }
  }
  if (comm_.size() > 1) comm_.broadcast(order.data(), n, DType::kInt32, 0);
  std::vector<size_t> layout_order;
  for (int32_t i : order) {
    if (i >= 0) layout_order.push_back(static_cast<size_t>(i));
  }
  std::lock_guard<std::mutex> lock(mu_);  // the comm thread reads buckets_ and ready_
  build(layout_order, std::min(cap_, kFirstBucketBytes));
  if (device_) device_->clear_layouts();
  ready_.assign(buckets_.size(), 0);
  next_ = buckets_.size();
  arrival_.clear();
  rebuilt_ = true;
}

}  // namespace dynamix
