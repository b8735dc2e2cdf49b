// DYNAMIX tests — BatchPrefetcher: submission order, exception propagation, shutdown, workers.
#include "datasets/prefetcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

#include "framework/core/error.h"

namespace dynamix {
namespace {

std::shared_ptr<Dataset> tiny() {
  DatasetSpec s{"synthetic", ""};
  s.shape = {2, 4, 4};
  s.classes = 3;
  s.train_size = 50;
  return load_dataset(s).train;
}

TEST(Prefetcher, ReturnsBatchesInSubmissionOrder) {
  auto ds = tiny();
  BatchPrefetcher pf(ds, /*pin_memory=*/true);
  std::vector<std::vector<int64_t>> batches{{0, 1, 2}, {9}, {49, 3, 3, 7}, {10, 11}, {20}};
  for (size_t i = 0; i < batches.size(); ++i) pf.submit(batches[i], i);
  EXPECT_EQ(pf.outstanding(), batches.size());
  for (size_t i = 0; i < batches.size(); ++i) {
    Batch got = pf.take();
    Batch want = ds->get(batches[i], i);
    EXPECT_TRUE(torch::equal(got.inputs, want.inputs)) << i;
    EXPECT_TRUE(torch::equal(got.targets, want.targets)) << i;
  }
  EXPECT_EQ(pf.outstanding(), 0u);
  EXPECT_THROW(pf.take(), Error);
}

TEST(Prefetcher, LoadErrorsReachTake) {
  BatchPrefetcher pf(tiny());
  pf.submit({1}, 0);
  pf.submit({1, 50}, 0);  // out of range
  pf.submit({2}, 0);
  EXPECT_EQ(pf.take().targets.size(0), 1);
  try {
    pf.take();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 50 out of range"), std::string::npos) << e.what();
  }
  EXPECT_EQ(pf.take().targets[0].item<int64_t>(), 2 % 3);  // the thread carries on
}

TEST(Prefetcher, FinishRunsOnTheLoaderThreadForEveryBatch) {
  // (The trainer's finish copies batches to the GPU there; this one marks them.)
  auto ds = tiny();
  const auto caller = std::this_thread::get_id();
  std::atomic<int> calls{0}, on_caller{0};
  BatchPrefetcher pf(ds, /*pin_memory=*/false, [&](Batch b) {
    ++calls;
    if (std::this_thread::get_id() == caller) ++on_caller;
    b.inputs = b.inputs + 1;
    return b;
  });
  pf.submit({4, 5}, 0);
  pf.submit({6}, 1);
  EXPECT_TRUE(torch::equal(pf.take().inputs, ds->get({4, 5}, 0).inputs + 1));
  EXPECT_TRUE(torch::equal(pf.take().inputs, ds->get({6}, 1).inputs + 1));
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(on_caller.load(), 0);
}

TEST(Prefetcher, ShutsDownWithWorkQueued) {
  auto ds = tiny();
  for (int round = 0; round < 20; ++round) {
    BatchPrefetcher pf(ds);
    for (int i = 0; i < 10; ++i) pf.submit({0, 1, 2, 3}, i);
    if (round % 2) pf.take();
  }  // destructors must not hang or crash
  SUCCEED();
}

// Records which threads load how many samples; forwards to a real dataset.
class Recording : public Dataset {
 public:
  explicit Recording(std::shared_ptr<Dataset> inner) : inner_(std::move(inner)) {}
  int64_t size() const override { return inner_->size(); }
  std::vector<int64_t> sample_shape() const override { return inner_->sample_shape(); }
  int64_t num_classes() const override { return inner_->num_classes(); }
  std::string task() const override { return inner_->task(); }
  Batch get(const std::vector<int64_t>& indices, uint64_t seed) const override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      threads_.insert(std::this_thread::get_id());
      chunks_.push_back(static_cast<int64_t>(indices.size()));
    }
    return inner_->get(indices, seed);
  }
  std::set<std::thread::id> threads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return threads_;
  }
  std::vector<int64_t> chunks() const {
    std::lock_guard<std::mutex> lock(mu_);
    return chunks_;
  }

 private:
  std::shared_ptr<Dataset> inner_;
  mutable std::mutex mu_;
  mutable std::set<std::thread::id> threads_;
  mutable std::vector<int64_t> chunks_;
};

std::vector<int64_t> shuffled(int64_t n, int64_t size) {
  std::vector<int64_t> idx(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = (i * 37 + 11) % size;
  return idx;
}

TEST(Prefetcher, WorkersSplitABatchAndJoinItUnchanged) {
  DatasetSpec images{"synthetic", ""};
  images.shape = {3, 8, 8};
  images.train_size = 1000;
  DatasetSpec tokens{"synthetic_tokens", ""};
  tokens.seq_len = 12;
  tokens.classes = 40;
  tokens.train_size = 1000;
  for (const DatasetSpec& spec : {images, tokens}) {
    auto inner = load_dataset(spec).train;
    for (int workers : {2, 3, 8}) {
      auto rec = std::make_shared<Recording>(inner);
      BatchPrefetcher pf(rec, /*pin_memory=*/true, {}, workers);
      const std::vector<int64_t> sizes{15, 40, 101};
      for (size_t i = 0; i < sizes.size(); ++i) pf.submit(shuffled(sizes[i], 1000), 7 + i);
      for (size_t i = 0; i < sizes.size(); ++i) {
        const Batch got = pf.take();
        const Batch want = inner->get(shuffled(sizes[i], 1000), 7 + i);  // masking depends on the seed
        EXPECT_TRUE(torch::equal(got.inputs, want.inputs))
            << spec.name << " workers " << workers << " n " << sizes[i];
        EXPECT_TRUE(torch::equal(got.targets, want.targets)) << spec.name << " workers " << workers;
      }
      // 15 samples: one chunk; 40: two of 20; 101: min(workers, 6) chunks.
      const std::vector<int64_t> chunks = rec->chunks();
      EXPECT_EQ(static_cast<int64_t>(chunks.size()), 1 + 2 + std::min(workers, 6)) << workers;
      EXPECT_EQ(std::accumulate(chunks.begin(), chunks.end(), int64_t{0}), 15 + 40 + 101);
      for (int64_t c : chunks) EXPECT_TRUE(c == 15 || c >= BatchPrefetcher::kMinChunk) << c;
      EXPECT_GE(rec->threads().size(), 2u) << "chunks loaded on one thread";
    }
  }
}

TEST(Prefetcher, AWorkersLoadErrorReachesTake) {
  DatasetSpec s{"synthetic", ""};
  s.shape = {1, 4, 4};
  s.train_size = 100;
  BatchPrefetcher pf(load_dataset(s).train, /*pin_memory=*/false, {}, 4);
  std::vector<int64_t> bad = shuffled(64, 100);
  bad.back() = 100;  // out of range, in the last chunk
  pf.submit(bad, 0);
  pf.submit(shuffled(64, 100), 0);
  try {
    pf.take();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 100 out of range"), std::string::npos) << e.what();
  }
  EXPECT_EQ(pf.take().targets.size(0), 64);
  EXPECT_THROW(BatchPrefetcher(load_dataset(s).train, false, {}, 0), Error);
}

}  // namespace
}  // namespace dynamix
