// DYNAMIX — NCF on synthetic interactions: shapes, gradients only on the touched embedding rows
// (what makes the workload sparse), and learning the hidden tastes well above chance.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <numeric>

#include "datasets/synthetic_interactions.h"
#include "models/registry.h"

namespace dynamix {
namespace {

ModelPtr ncf_for(const Dataset& d) {
  ModelSpec spec;
  spec.input_shape = d.sample_shape();
  spec.num_classes = d.num_classes();
  spec.input_cardinality = d.input_cardinality();
  return make_model("ncf", spec);
}

TEST(SyntheticInteractions, DeterministicInRangeSkewedAndBalanced) {
  SyntheticInteractions d(20000, 1000, 500, 1);
  std::vector<int64_t> idx(20000);
  std::iota(idx.begin(), idx.end(), 0);
  const Batch a = d.get(idx, 0), b = d.get(idx, 99);
  EXPECT_TRUE(torch::equal(a.inputs, b.inputs));
  EXPECT_TRUE(torch::equal(a.targets, b.targets));
  EXPECT_EQ(a.inputs.sizes(), (std::vector<int64_t>{20000, 2}));
  const auto users = a.inputs.select(1, 0), items = a.inputs.select(1, 1);
  EXPECT_GE(users.min().item<int64_t>(), 0);
  EXPECT_LT(users.max().item<int64_t>(), 1000);
  EXPECT_LT(items.max().item<int64_t>(), 500);
  // Quadratic skew: half of the draws fall in the first quarter of the ids.
  EXPECT_NEAR(users.lt(250).to(torch::kFloat64).mean().item<double>(), 0.5, 0.02);
  EXPECT_NEAR(a.targets.to(torch::kFloat64).mean().item<double>(), 0.5, 0.05);
  EXPECT_THROW(d.get({20000}, 0), std::exception);
}

TEST(Ncf, GradientsTouchOnlyTheBatchsEmbeddingRows) {
  SyntheticInteractions d(1000, 5000, 3000, 2);
  auto model = ncf_for(d);
  const Batch batch = d.get({0, 1, 2, 3, 4, 5, 6, 7}, 0);
  const auto logits = model->forward(batch.inputs);
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{8, 2}));
  torch::nn::functional::cross_entropy(logits, batch.targets).backward();
  int64_t embedding_values = 0, nonzero_rows = 0;
  for (const auto& p : model->named_parameters()) {
    if (p.key().find("user") == std::string::npos && p.key().find("item") == std::string::npos) continue;
    embedding_values += p.value().numel();
    nonzero_rows += p.value().grad().abs().sum(1).gt(0).sum().item<int64_t>();
  }
  EXPECT_EQ(embedding_values, 2 * (5000 + 3000) * 32);
  EXPECT_GT(nonzero_rows, 0);
  EXPECT_LE(nonzero_rows, 4 * 8);  // at most one row per sample in each of the four tables
}

TEST(Ncf, LearnsTheHiddenTastesAboveChance) {
  torch::manual_seed(0);
  SyntheticInteractions train(20000, 200, 100, 3), test(2000, 200, 100, 4);
  auto model = ncf_for(train);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(0.01));
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (int64_t s = 0; s < train.size(); s += 256) {
      std::vector<int64_t> idx(static_cast<size_t>(std::min<int64_t>(256, train.size() - s)));
      std::iota(idx.begin(), idx.end(), s);
      const Batch b = train.get(idx, 0);
      opt.zero_grad();
      torch::nn::functional::cross_entropy(model->forward(b.inputs), b.targets).backward();
      opt.step();
    }
  }
  std::vector<int64_t> idx(2000);
  std::iota(idx.begin(), idx.end(), 0);
  const Batch b = test.get(idx, 0);
  torch::NoGradGuard no_grad;
  const double acc =
      model->forward(b.inputs).argmax(1).eq(b.targets).to(torch::kFloat64).mean().item<double>();
  EXPECT_GT(acc, 0.75) << "test accuracy " << acc;
}

TEST(Ncf, RejectsInputsWithoutIdCounts) {
  ModelSpec spec;
  spec.input_shape = {1, 28, 28};
  EXPECT_THROW(make_model("ncf", spec), std::exception);
}

}  // namespace
}  // namespace dynamix
