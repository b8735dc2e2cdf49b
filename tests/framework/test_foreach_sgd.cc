// ForeachSgd against LibTorch's SGD: the same parameters, bit for bit, and the same state.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sstream>
#include <vector>

#include "framework/train/foreach_sgd.h"

namespace dynamix {
namespace {

using torch::optim::SGDOptions;

std::vector<torch::Tensor> make_params(int64_t seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> ps;
  for (auto shape : {std::vector<int64_t>{7, 5}, {5}, {3, 2, 2}, {1}}) {
    ps.push_back(torch::randn(shape).requires_grad_(true));
  }
  return ps;
}

std::vector<torch::Tensor> copies(const std::vector<torch::Tensor>& ps) {
  std::vector<torch::Tensor> out;
  for (const auto& p : ps) out.push_back(p.detach().clone().requires_grad_(true));
  return out;
}

// Step k's gradients, the same for both sets. Parameter 2 has none on steps 0-1 (no state yet,
// then a fresh momentum buffer among old ones), parameter 3 none on step 3 (skipped, kept).
void set_grads(std::vector<torch::Tensor>& ps, int k) {
  torch::manual_seed(100 + k);
  for (size_t i = 0; i < ps.size(); ++i) {
    const bool none = (i == 2 && k < 2) || (i == 3 && k == 3);
    ps[i].mutable_grad() = none ? torch::Tensor() : torch::randn(ps[i].sizes());
  }
}

void expect_same_steps(const SGDOptions& options) {
  auto a = make_params(1), b = copies(a);
  torch::optim::SGD reference(a, options);
  ForeachSgd foreach_sgd(b, options);
  for (int k = 0; k < 6; ++k) {
    set_grads(a, k);
    set_grads(b, k);
    reference.step();
    foreach_sgd.step();
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i << " after step " << k;
    }
  }
  EXPECT_EQ(reference.state().size(), foreach_sgd.state().size());
}

TEST(ForeachSgd, PlainSgdIsLibTorchsBitForBit) { expect_same_steps(SGDOptions(0.1)); }

TEST(ForeachSgd, MomentumIsLibTorchsBitForBit) { expect_same_steps(SGDOptions(0.05).momentum(0.9)); }

TEST(ForeachSgd, DampeningAndWeightDecayAreLibTorchsBitForBit) {
  expect_same_steps(SGDOptions(0.05).momentum(0.8).dampening(0.3).weight_decay(0.01));
}

TEST(ForeachSgd, NesterovWithWeightDecayIsLibTorchsBitForBit) {
  expect_same_steps(SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(5e-4));
}

// A checkpoint's optimizer state goes both ways: saved by one, loaded by the other, the next
// steps agree bit for bit.
TEST(ForeachSgd, StateSavedByEitherLoadsIntoTheOther) {
  const auto options = SGDOptions(0.05).momentum(0.9);
  auto a = make_params(2), b = copies(a);
  ForeachSgd first(a, options);
  for (int k = 2; k < 5; ++k) {
    set_grads(a, k);
    first.step();
  }
  std::stringstream bytes;
  {
    torch::serialize::OutputArchive out;
    first.save(out);
    out.save_to(bytes);
  }
  for (size_t i = 0; i < a.size(); ++i) b[i].detach().copy_(a[i].detach());
  torch::optim::SGD second(b, options);
  torch::serialize::InputArchive in;
  in.load_from(bytes);
  second.load(in);
  for (int k = 5; k < 8; ++k) {
    set_grads(a, k);
    set_grads(b, k);
    first.step();
    second.step();
  }
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i;
}

}  // namespace
}  // namespace dynamix
