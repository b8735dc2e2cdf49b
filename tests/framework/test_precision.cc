// DYNAMIX — bf16 autocast scope and channels_last conversion.
#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "framework/train/precision.h"
#include "models/registry.h"

namespace dynamix {
namespace {

TEST(AutocastScope, Bf16CastsMatmulsInsideOnlyAndRestoresState) {
  const auto a = torch::randn({8, 8}), b = torch::randn({8, 8});
  EXPECT_EQ(torch::matmul(a, b).scalar_type(), torch::kFloat32);
  {
    AutocastScope outer(Precision::kBf16, torch::kCPU);
    EXPECT_EQ(torch::matmul(a, b).scalar_type(), torch::kBFloat16);
    {
      AutocastScope fp32(Precision::kFp32, torch::kCPU);  // does nothing: still inside the bf16 scope
      EXPECT_EQ(torch::matmul(a, b).scalar_type(), torch::kBFloat16);
    }
    EXPECT_EQ(torch::matmul(a, b).scalar_type(), torch::kBFloat16);
    EXPECT_EQ(torch::matmul(a.to(torch::kFloat64), b.to(torch::kFloat64)).scalar_type(), torch::kFloat64);
  }
  EXPECT_EQ(torch::matmul(a, b).scalar_type(), torch::kFloat32);
}

TEST(AutocastScope, Fp16OnTheCpuIsAnError) {
  EXPECT_THROW({ AutocastScope scope(Precision::kFp16, torch::kCPU); }, Error);
}

ModelPtr small_cnn() {
  torch::manual_seed(3);
  return make_model("cnn", ModelSpec{{1, 28, 28}, 10, "classify"});
}

TEST(ChannelsLast, ConvertsFourDimensionalWeightsInPlaceAndComputesTheSame) {
  auto plain = small_cnn(), cl = small_cnn();
  auto params = cl->parameters();
  std::vector<const void*> impls;
  for (auto& p : params) impls.push_back(p.unsafeGetTensorImpl());
  to_channels_last(*cl);
  int converted = 0;
  auto after = cl->parameters();
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].unsafeGetTensorImpl(), impls[i]) << "parameter " << i << " replaced";
    if (after[i].dim() == 4) {
      EXPECT_TRUE(after[i].is_contiguous(torch::MemoryFormat::ChannelsLast)) << "parameter " << i;
      // (With one input channel both layouts coincide; with more they differ.)
      if (after[i].size(1) > 1) EXPECT_FALSE(after[i].is_contiguous()) << "parameter " << i;
      ++converted;
    }
  }
  EXPECT_GE(converted, 2);

  torch::manual_seed(4);
  const auto x = torch::randn({6, 1, 28, 28});
  const auto y = torch::randint(0, 10, {6});
  auto loss_plain = torch::nn::functional::cross_entropy(plain->forward(x), y);
  auto loss_cl = torch::nn::functional::cross_entropy(cl->forward(channels_last_input(x)), y);
  EXPECT_NEAR(loss_plain.item<double>(), loss_cl.item<double>(), 1e-5);
  loss_plain.backward();
  loss_cl.backward();
  auto pp = plain->parameters(), pc = cl->parameters();
  for (size_t i = 0; i < pp.size(); ++i) {
    EXPECT_TRUE(torch::allclose(pp[i].grad(), pc[i].grad(), 1e-4, 1e-6)) << "gradient " << i;
    // AccumulateGrad lays gradients out like their parameters (what the buckets rely on).
    EXPECT_EQ(pc[i].grad().strides(), pc[i].strides()) << "gradient " << i;
  }
}

TEST(ChannelsLast, OtherInputsAreUnchanged) {
  const auto x = torch::randn({3, 5});
  EXPECT_TRUE(channels_last_input(x).is_same(x));
}

TEST(Bf16Training, LossFallsAndWeightsStayFloat32) {
  auto model = small_cnn();
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  torch::manual_seed(5);
  const auto x = torch::randn({32, 1, 28, 28});
  const auto y = torch::randint(0, 10, {32});
  double first = 0, last = 0;
  for (int step = 0; step < 25; ++step) {
    opt.zero_grad();
    torch::Tensor loss;
    {
      AutocastScope autocast(Precision::kBf16, torch::kCPU);
      auto logits = model->forward(x);
      EXPECT_EQ(logits.scalar_type(), torch::kBFloat16);
      loss = torch::nn::functional::cross_entropy(logits.to(torch::kFloat32), y);
    }
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, 0.5 * first);
  for (const auto& p : model->parameters()) {
    EXPECT_EQ(p.scalar_type(), torch::kFloat32);
    EXPECT_EQ(p.grad().scalar_type(), torch::kFloat32);
  }
}

}  // namespace
}  // namespace dynamix
