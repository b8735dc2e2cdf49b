// DYNAMIX — every registered name builds and yields logits of the promised shape on tiny inputs.
#include <gtest/gtest.h>

#include "framework/core/error.h"
#include "models/registry.h"

namespace dynamix {
namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// 16x16 / 32x32 inputs pick the CIFAR stem/head for every image model: no ImageNet-size forward here.
TEST(Zoo, EveryNameGivesLogitsOfTheRightShape) {
  torch::manual_seed(0);
  torch::NoGradGuard no_grad;
  for (const auto& name : model_names()) {
    SCOPED_TRACE(name);
    if (name == "bert_base") continue;  // 110M parameters: its shapes are checked where test_counts builds it
    if (starts_with(name, "bert_")) {
      const int64_t len = 12;
      auto ids = torch::randint(1, 100, {2, len}, torch::kLong);
      auto cls = make_model(name, ModelSpec{{len}, 3, "classify"});
      cls->eval();
      EXPECT_EQ(cls->forward(ids).sizes(), torch::IntArrayRef({2, 3}));
      auto mlm = make_model(name, ModelSpec{{len}, 100, "mlm"});
      mlm->eval();
      EXPECT_EQ(mlm->forward(ids).sizes(), torch::IntArrayRef({2, len, 100}));
    } else if (name == "ncf") {
      ModelSpec spec{{2}, 2, "classify"};
      spec.input_cardinality = {50, 40};
      auto m = make_model(name, spec);
      auto pairs = torch::stack(
          {torch::randint(0, 50, {5}, torch::kLong), torch::randint(0, 40, {5}, torch::kLong)}, 1);
      EXPECT_EQ(m->forward(pairs).sizes(), torch::IntArrayRef({5, 2}));
    } else {
      const int64_t side = starts_with(name, "vgg") ? 32 : 16;  // VGG pools five times
      auto m = make_model(name, ModelSpec{{3, side, side}, 7, "classify"});
      m->eval();
      EXPECT_EQ(m->forward(torch::randn({1, 3, side, side})).sizes(), torch::IntArrayRef({1, 7}));
    }
  }
}

// ImageNet stem and head at the smallest size that selects them (64x64), batch 2.
TEST(Zoo, ImageNetVariantsAt64) {
  torch::manual_seed(0);
  torch::NoGradGuard no_grad;
  for (const char* name : {"resnet18", "resnet50", "vgg11_bn"}) {
    SCOPED_TRACE(name);
    auto m = make_model(name, ModelSpec{{3, 64, 64}, 5, "classify"});
    m->eval();
    EXPECT_EQ(m->forward(torch::randn({2, 3, 64, 64})).sizes(), torch::IntArrayRef({2, 5}));
  }
  auto gray = make_model("resnet18", ModelSpec{{1, 28, 28}, 10, "classify"});
  gray->eval();
  EXPECT_EQ(gray->forward(torch::randn({2, 1, 28, 28})).sizes(), torch::IntArrayRef({2, 10}));
}

TEST(Zoo, RejectsUnfitSpecs) {
  EXPECT_THROW(make_model("vgg11", ModelSpec{{3, 16, 16}, 10, "classify"}), Error);
  EXPECT_THROW(make_model("resnet18", ModelSpec{{3, 32, 32}, 10, "mlm"}), Error);
  EXPECT_THROW(make_model("bert_tiny", ModelSpec{{513}, 2, "classify"}), Error);
  EXPECT_THROW(make_model("bert_tiny", ModelSpec{{3, 32, 32}, 2, "classify"}), Error);
  EXPECT_THROW(make_model("bert_tiny", ModelSpec{{16}, 2, "regress"}), Error);
  auto bert = make_model("bert_tiny", ModelSpec{{8}, 2, "classify"});
  EXPECT_THROW(bert->forward(torch::randn({2, 8})), Error);  // token ids must be int64
}

// [PAD] (id 0) is masked out of attention: appending padding leaves every real position unchanged.
TEST(Bert, PaddingDoesNotChangeRealTokens) {
  torch::manual_seed(4);
  torch::NoGradGuard no_grad;
  auto ids = torch::randint(1, 50, {2, 6}, torch::kLong);
  auto padded = torch::cat({ids, torch::zeros({2, 4}, torch::kLong)}, 1);
  auto mlm = make_model("bert_tiny", ModelSpec{{10}, 50, "mlm"});
  mlm->eval();
  auto a = mlm->forward(ids);
  auto b = mlm->forward(padded).slice(1, 0, 6);
  EXPECT_TRUE(torch::allclose(a, b, 1e-4, 1e-5)) << (a - b).abs().max().item<double>();
  auto cls = make_model("bert_tiny", ModelSpec{{10}, 3, "classify"});
  cls->eval();
  EXPECT_TRUE(torch::allclose(cls->forward(ids), cls->forward(padded), 1e-4, 1e-5));
  // Without the mask the padded tokens would change the output; make sure this test can tell.
  auto other = padded.clone();
  other.slice(1, 6, 10).fill_(7);
  EXPECT_FALSE(torch::allclose(a, mlm->forward(other).slice(1, 0, 6), 1e-4, 1e-5));
}

// The MLM decoder shares the word-embedding matrix: changing one changes the logits.
TEST(Bert, MlmDecoderIsTiedToWordEmbeddings) {
  torch::manual_seed(5);
  auto mlm = make_model("bert_tiny", ModelSpec{{4}, 30, "mlm"});
  mlm->eval();
  torch::Tensor word;
  for (const auto& kv : mlm->named_parameters()) {
    if (kv.key().find("word_embeddings") != std::string::npos) word = kv.value();
  }
  ASSERT_TRUE(word.defined());
  ASSERT_EQ(word.sizes(), torch::IntArrayRef({30, 128}));
  torch::NoGradGuard no_grad;
  auto ids = torch::tensor({{1, 2, 3, 4}}, torch::kLong);
  auto before = mlm->forward(ids).select(2, 29).clone();  // logit of token 29, absent from the input
  word[29].add_(1.0);
  EXPECT_FALSE(torch::allclose(before, mlm->forward(ids).select(2, 29)));
}

}  // namespace
}  // namespace dynamix
