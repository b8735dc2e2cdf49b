// DYNAMIX — loads batches on one background thread, in submission order. With workers > 1 a
// batch is split into chunks loaded in parallel and joined in order: samples are pure functions
// of (seed, index) (Dataset::get), so the batch is the same for any number of workers.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "datasets/dataset.h"

namespace dynamix {

class BatchPrefetcher {
 public:
  // pin_memory: page-lock batch tensors for faster host-to-GPU copies; ignored without CUDA.
  // finish: runs on the loader thread on every loaded batch (e.g. its copy to the GPU).
  // workers: threads that load one batch (>= 1); chunks hold at least kMinChunk samples.
  explicit BatchPrefetcher(std::shared_ptr<const Dataset> dataset, bool pin_memory = false,
                           std::function<Batch(Batch)> finish = {}, int workers = 1);
  ~BatchPrefetcher();  // drops queued loads, waits for the one in progress, joins the thread
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  // Queues dataset->get(indices, seed).
  void submit(std::vector<int64_t> indices, uint64_t seed);
  // The oldest submitted batch not yet taken, waiting for it if needed. Rethrows what the load
  // threw; throws dynamix::Error when nothing is outstanding.
  Batch take();
  size_t outstanding() const;  // submitted and not yet taken
  bool pinning() const { return pin_; }

  static constexpr int64_t kMinChunk = 16;

 private:
  struct Job {
    std::vector<int64_t> indices;
    uint64_t seed;
    std::promise<Batch> result;
  };
  void run();
  Batch load(const std::vector<int64_t>& indices, uint64_t seed) const;

  std::shared_ptr<const Dataset> dataset_;
  bool pin_;
  int workers_;
  std::function<Batch(Batch)> finish_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;                  // waiting for the thread
  std::deque<std::future<Batch>> ready_;  // in submission order, for take()
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dynamix
