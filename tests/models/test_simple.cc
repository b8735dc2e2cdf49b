// DYNAMIX — the small CNN and the MLP: shapes, exact parameter counts, determinism, learning.
#include <gtest/gtest.h>

#include "models/registry.h"
#include "tests/models/train_util.h"

namespace dynamix {
namespace {

TEST(Cnn, ShapeAndParameterCount) {
  torch::manual_seed(0);
  auto m = make_model("cnn", ModelSpec{{1, 28, 28}, 10, "classify"});
  EXPECT_EQ(m->forward(torch::randn({3, 1, 28, 28})).sizes(), torch::IntArrayRef({3, 10}));
  // conv 1*32*9+32, conv 32*64*9+64, fc (64*7*7)*128+128, fc 128*10+10.
  EXPECT_EQ(count_parameters(*m), 320 + 18496 + 401536 + 1290);
  auto rgb = make_model("cnn", ModelSpec{{3, 32, 32}, 100, "classify"});
  EXPECT_EQ(rgb->forward(torch::randn({2, 3, 32, 32})).sizes(), torch::IntArrayRef({2, 100}));
  auto odd = make_model("cnn", ModelSpec{{2, 9, 13}, 5, "classify"});
  EXPECT_EQ(odd->forward(torch::randn({2, 2, 9, 13})).sizes(), torch::IntArrayRef({2, 5}));
}

// The trainer's exactness tests rely on a model with no randomness and no batch statistics.
TEST(Cnn, DeterministicInTrainModeAndPerSample) {
  torch::manual_seed(1);
  auto m = make_model("cnn", ModelSpec{{1, 28, 28}, 10, "classify"});
  m->train();
  auto x = torch::randn({4, 1, 28, 28});
  auto a = m->forward(x);
  auto b = m->forward(x);
  EXPECT_TRUE(torch::equal(a, b));
  // Each sample's logits do not depend on the rest of the batch.
  auto first = m->forward(x.slice(0, 0, 1));
  EXPECT_TRUE(torch::allclose(first, a.slice(0, 0, 1), 1e-5, 1e-6));
  EXPECT_TRUE(m->buffers().empty());
}

TEST(Mlp, ShapeAndParameterCount) {
  torch::manual_seed(0);
  auto m = make_model("mlp", ModelSpec{{1, 28, 28}, 10, "classify"});
  EXPECT_EQ(m->forward(torch::randn({5, 1, 28, 28})).sizes(), torch::IntArrayRef({5, 10}));
  EXPECT_EQ(count_parameters(*m), (784 * 256 + 256) + (256 * 128 + 128) + (128 * 10 + 10));
  auto flat = make_model("mlp", ModelSpec{{20}, 3, "classify"});
  EXPECT_EQ(flat->forward(torch::randn({2, 20})).sizes(), torch::IntArrayRef({2, 3}));
}

TEST(Cnn, SgdMomentumLowersLoss) {
  torch::manual_seed(2);
  auto m = make_model("cnn", ModelSpec{{1, 28, 28}, 10, "classify"});
  auto x = torch::randn({16, 1, 28, 28});
  auto y = torch::arange(16) % 10;
  torch::optim::SGD opt(m->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  auto [before, after] = testing::fit_batch(*m, opt, x, y, 10);
  EXPECT_LT(after, 0.5 * before) << before << " -> " << after;
}

TEST(Mlp, AdamLowersLoss) {
  torch::manual_seed(3);
  auto m = make_model("mlp", ModelSpec{{1, 28, 28}, 10, "classify"});
  auto x = torch::randn({16, 1, 28, 28});
  auto y = torch::arange(16) % 10;
  torch::optim::Adam opt(m->parameters(), torch::optim::AdamOptions(1e-3));
  auto [before, after] = testing::fit_batch(*m, opt, x, y, 10);
  EXPECT_LT(after, 0.5 * before) << before << " -> " << after;
}

}  // namespace
}  // namespace dynamix
