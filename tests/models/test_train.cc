// DYNAMIX — a few optimizer steps on one tiny fixed batch lower the loss, for each model family.
#include <gtest/gtest.h>

#include "models/registry.h"
#include "tests/models/train_util.h"

namespace dynamix {
namespace {

using testing::fit_batch;

TEST(Train, ResNet18CifarSgd) {
  torch::manual_seed(10);
  auto m = make_model("resnet18_cifar", ModelSpec{{3, 16, 16}, 10, "classify"});
  auto x = torch::randn({8, 3, 16, 16});
  auto y = torch::arange(8) % 10;
  torch::optim::SGD opt(m->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  auto [before, after] = fit_batch(*m, opt, x, y, 8);
  EXPECT_LT(after, 0.5 * before) << before << " -> " << after;
}

TEST(Train, Vgg11BnCifarSgd) {
  torch::manual_seed(11);
  auto m = make_model("vgg11_bn_cifar", ModelSpec{{3, 32, 32}, 10, "classify"});
  auto x = torch::randn({8, 3, 32, 32});
  auto y = torch::arange(8) % 10;
  torch::optim::SGD opt(m->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  auto [before, after] = fit_batch(*m, opt, x, y, 8);
  EXPECT_LT(after, 0.5 * before) << before << " -> " << after;
}

TEST(Train, BertTinyClassifyAdam) {
  torch::manual_seed(12);
  auto m = make_model("bert_tiny", ModelSpec{{16}, 2, "classify"});
  auto x = torch::randint(1, 1000, {8, 16}, torch::kLong);
  auto y = torch::arange(8) % 2;
  torch::optim::Adam opt(m->parameters(), torch::optim::AdamOptions(1e-3));
  auto [before, after] = fit_batch(*m, opt, x, y, 15);
  EXPECT_LT(after, 0.5 * before) << before << " -> " << after;
}

// Masked-LM objective: 1 in 4 positions replaced by [MASK] (id 1) and predicted; the rest ignored.
TEST(Train, BertTinyMlmAdam) {
  torch::manual_seed(13);
  const int64_t vocab = 1000;
  auto m = make_model("bert_tiny", ModelSpec{{16}, vocab, "mlm"});
  auto ids = torch::randint(2, vocab, {8, 16}, torch::kLong);
  auto masked = (torch::arange(16) % 4 == 1).expand({8, 16});
  auto x = ids.masked_fill(masked, 1);
  auto y = ids.masked_fill(masked.logical_not(), -100);
  torch::optim::Adam opt(m->parameters(), torch::optim::AdamOptions(2e-3));
  auto [before, after] = fit_batch(*m, opt, x, y, 15);
  EXPECT_LT(after, 0.7 * before) << before << " -> " << after;
}

}  // namespace
}  // namespace dynamix
