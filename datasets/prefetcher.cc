// DYNAMIX — the prefetch thread: a job queue in, futures out (they carry exceptions to take()).
#include "datasets/prefetcher.h"

#include "framework/core/error.h"

namespace dynamix {

BatchPrefetcher::BatchPrefetcher(std::shared_ptr<const Dataset> dataset, bool pin_memory,
                                 std::function<Batch(Batch)> finish)
    : dataset_(std::move(dataset)),
      pin_(pin_memory && torch::cuda::is_available()),
      finish_(std::move(finish)) {
  if (!dataset_) throw Error("BatchPrefetcher: null dataset");
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
      Batch b = dataset_->get(job.indices, job.seed);
      if (pin_) {
        b.inputs = b.inputs.pin_memory();
        b.targets = b.targets.pin_memory();
      }
      if (finish_) b = finish_(std::move(b));
      job.result.set_value(std::move(b));
    } catch (...) {
      job.result.set_exception(std::current_exception());
    }
  }
}

}  // namespace dynamix
