// DYNAMIX tests — synthetic images (shapes, determinism, learnability) and synthetic tokens.
#include <gtest/gtest.h>

#include "datasets/dataset.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

DatasetSpec synthetic(std::vector<int64_t> shape, int64_t classes, int64_t train = 64, int64_t test = 32) {
  DatasetSpec s{"synthetic", ""};
  s.shape = std::move(shape);
  s.classes = classes;
  s.train_size = train;
  s.test_size = test;
  return s;
}

TEST(Synthetic, ShapesAndLabels) {
  for (const auto& shape : std::vector<std::vector<int64_t>>{{3, 32, 32}, {1, 28, 28}, {20}, {5, 7}}) {
    DatasetSplits s = load_dataset(synthetic(shape, 7));
    EXPECT_EQ(s.train->size(), 64);
    EXPECT_EQ(s.test->size(), 32);
    EXPECT_EQ(s.train->sample_shape(), shape);
    EXPECT_EQ(s.train->num_classes(), 7);
    Batch b = s.train->get({0, 8, 63}, 0);
    std::vector<int64_t> want{3};
    want.insert(want.end(), shape.begin(), shape.end());
    EXPECT_EQ(b.inputs.sizes(), want);
    EXPECT_EQ(b.inputs.dtype(), torch::kFloat32);
    EXPECT_EQ(b.targets[1].item<int64_t>(), 8 % 7);
    EXPECT_TRUE(torch::isfinite(b.inputs).all().item<bool>());
  }
}

TEST(Synthetic, DeterministicPerIndexAndDistinctSplits) {
  DatasetSplits s = load_dataset(synthetic({3, 8, 8}, 4));
  Batch a = s.train->get({5, 9}, 1), b = s.train->get({9, 5}, 777);
  EXPECT_TRUE(torch::equal(a.inputs[0], b.inputs[1]));
  EXPECT_TRUE(torch::equal(a.inputs[1], b.inputs[0]));
  // A second load (another rank) sees identical data.
  EXPECT_TRUE(torch::equal(load_dataset(synthetic({3, 8, 8}, 4)).train->get({5, 9}, 0).inputs, a.inputs));
  // Train and test sample 5 share the label but not the noise.
  EXPECT_FALSE(torch::equal(s.test->get({5}, 1).inputs[0], a.inputs[0]));
  // Noise is roughly standard normal around the class pattern.
  std::vector<int64_t> same_class;
  for (int64_t i = 0; i < 64; i += 4) same_class.push_back(i);
  torch::Tensor x = s.train->get(same_class, 0).inputs;
  torch::Tensor noise = x - x.mean(0, true);
  EXPECT_NEAR(noise.std().item<float>(), 1.0f, 0.1f);
}

TEST(Synthetic, ALinearModelLearnsIt) {
  DatasetSplits s = load_dataset(synthetic({1, 8, 8}, 4, 512, 256));
  torch::manual_seed(0);
  torch::nn::Linear model(64, 4);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05));
  for (int step = 0; step < 40; ++step) {
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < 64; ++i) idx.push_back((step * 64 + i) % 512);
    Batch b = s.train->get(idx, step);
    opt.zero_grad();
    torch::Tensor loss = torch::cross_entropy_loss(model(b.inputs.flatten(1)), b.targets);
    loss.backward();
    opt.step();
  }
  std::vector<int64_t> all(256);
  for (int64_t i = 0; i < 256; ++i) all[i] = i;
  Batch t = s.test->get(all, 0);
  const double acc =
      model(t.inputs.flatten(1)).argmax(1).eq(t.targets).to(torch::kFloat64).mean().item<double>();
  EXPECT_GT(acc, 0.9);
}

TEST(Synthetic, BadSpecIsAnError) {
  EXPECT_THROW(load_dataset(synthetic({3, 0, 8}, 4)), Error);
  EXPECT_THROW(load_dataset(synthetic({3, 8, 8}, 1)), Error);
  EXPECT_THROW(load_dataset(synthetic({3, 8, 8}, 4, 0)), Error);
  DatasetSpec aug = synthetic({3, 8, 8}, 4);
  aug.augment = true;
  EXPECT_THROW(load_dataset(aug), Error);
  EXPECT_THROW(load_dataset({"imagenet", ""}), Error);
}

TEST(SyntheticTokens, ShapesMaskingAndDeterminism) {
  DatasetSpec spec{"synthetic_tokens", ""};
  spec.classes = 1000;  // vocabulary size
  spec.seq_len = 32;
  spec.train_size = 100;
  DatasetSplits s = load_dataset(spec);
  EXPECT_EQ(s.train->task(), "mlm");
  EXPECT_EQ(s.train->num_classes(), 1000);
  EXPECT_EQ(s.train->sample_shape(), (std::vector<int64_t>{32}));
  Batch a = s.train->get({3, 4}, 9);
  ASSERT_EQ(a.inputs.sizes(), (std::vector<int64_t>{2, 32}));
  EXPECT_EQ(a.inputs.dtype(), torch::kInt64);
  EXPECT_EQ(a.inputs[0][0].item<int64_t>(), 2);   // [CLS]
  EXPECT_EQ(a.inputs[0][31].item<int64_t>(), 3);  // [SEP]
  EXPECT_TRUE(a.inputs.lt(1000).all().item<bool>());
  EXPECT_GE(a.targets.ne(-100).sum().item<int64_t>(), 2);  // at least one target per row
  Batch b = s.train->get({4, 3}, 9);
  EXPECT_TRUE(torch::equal(a.inputs[0], b.inputs[1]));
  EXPECT_TRUE(torch::equal(a.targets[0], b.targets[1]));
}

}  // namespace
}  // namespace dynamix
