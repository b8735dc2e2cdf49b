// DYNAMIX tests — BatchPrefetcher: submission order, exception propagation, shutdown.
#include "datasets/prefetcher.h"

#include <gtest/gtest.h>

#include <atomic>
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

}  // namespace
}  // namespace dynamix
