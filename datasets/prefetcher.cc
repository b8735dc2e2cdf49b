// DYNAMIX — the prefetch thread: a job queue in, futures out (they carry exceptions to take()).
#include "datasets/prefetcher.h"

#include <algorithm>

#include "framework/core/error.h"

namespace dynamix {
namespace {

// The parts' `field` tensors joined along the batch dimension, page-locked if `pin` (one part is
// taken as it is).
torch::Tensor join(const std::vector<Batch>& parts, torch::Tensor Batch::*field, bool pin) {
  std::vector<torch::Tensor> pieces;
  for (const Batch& part : parts) pieces.push_back(part.*field);
  if (pieces.size() == 1) return pin ? pieces[0].pin_memory() : pieces[0];
  if (!pin) return torch::cat(pieces, 0);
  std::vector<int64_t> shape = pieces[0].sizes().vec();
  shape[0] = 0;
  for (const auto& piece : pieces) shape[0] += piece.size(0);
  torch::Tensor out = torch::empty(shape, pieces[0].options().pinned_memory(true));
  torch::cat_out(out, pieces, 0);
  return out;
}

}  // namespace

BatchPrefetcher::BatchPrefetcher(std::shared_ptr<const Dataset> dataset, bool pin_memory,
                                 std::function<Batch(Batch)> finish, int workers)
    : dataset_(std::move(dataset)),
      pin_(pin_memory && torch::cuda::is_available()),
      workers_(workers),
      finish_(std::move(finish)) {
  if (!dataset_) throw Error("BatchPrefetcher: null dataset");
  if (workers_ < 1) throw Error("BatchPrefetcher: workers must be >= 1, got " + std::to_string(workers_));
  thread_ = std::thread([this] { run(); });
}

BatchPrefetcher::~BatchPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void BatchPrefetcher::submit(std::vector<int64_t> indices, uint64_t seed) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(Job{std::move(indices), seed, {}});
    ready_.push_back(jobs_.back().result.get_future());
  }
  cv_.notify_one();
}

Batch BatchPrefetcher::take() {
  std::future<Batch> next;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ready_.empty()) throw Error("BatchPrefetcher::take() with no batch submitted");
    next = std::move(ready_.front());
    ready_.pop_front();
  }
  return next.get();
}

size_t BatchPrefetcher::outstanding() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_.size();
}

void BatchPrefetcher::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    try {
      Batch b = load(job.indices, job.seed);
      if (finish_) b = finish_(std::move(b));
      job.result.set_value(std::move(b));
    } catch (...) {
      job.result.set_exception(std::current_exception());
    }
  }
}

// Chunk 0 loads on this thread, the others on threads of their own (a thread start costs tens of
// microseconds; a batch worth splitting takes milliseconds).
Batch BatchPrefetcher::load(const std::vector<int64_t>& indices, uint64_t seed) const {
  const int64_t n = static_cast<int64_t>(indices.size());
  const int64_t chunks = std::clamp<int64_t>(n / kMinChunk, 1, workers_);
  auto chunk = [&](int64_t c) {
    return std::vector<int64_t>(indices.begin() + c * n / chunks, indices.begin() + (c + 1) * n / chunks);
  };
  std::vector<std::future<Batch>> others;
  for (int64_t c = 1; c < chunks; ++c) {
    others.push_back(
        std::async(std::launch::async, [this, part = chunk(c), seed] { return dataset_->get(part, seed); }));
  }
  std::vector<Batch> parts;
  parts.push_back(dataset_->get(chunk(0), seed));
  for (auto& f : others) parts.push_back(f.get());
  return {join(parts, &Batch::inputs, pin_), join(parts, &Batch::targets, pin_)};
}

}  // namespace dynamix
