// DYNAMIX — parameter counts equal the reference implementations (torchvision, Hugging Face BERT).
#include <gtest/gtest.h>

#include <utility>

#include "models/registry.h"

namespace dynamix {
namespace {

int64_t count(const std::string& name, ModelSpec spec) { return count_parameters(*make_model(name, spec)); }

const ModelSpec kImageNet{{3, 224, 224}, 1000, "classify"};
const ModelSpec kCifar10{{3, 32, 32}, 10, "classify"};

// Reference: torchvision.models.resnet*(num_classes=1000).
TEST(ParameterCount, ResNetMatchesTorchvision) {
  EXPECT_EQ(count("resnet18", kImageNet), 11689512);
  EXPECT_EQ(count("resnet34", kImageNet), 21797672);
  EXPECT_EQ(count("resnet50", kImageNet), 25557032);
  EXPECT_EQ(count("resnet101", kImageNet), 44549160);
}

// CIFAR stem: conv1 is 3x3x3x64 (1,728) instead of 7x7x3x64 (9,408); fc 512x10+10 instead of 513,000.
TEST(ParameterCount, ResNetCifarStem) {
  EXPECT_EQ(count("resnet18", kCifar10), 11689512 - 9408 + 1728 - 513000 + 5130);
  EXPECT_EQ(count("resnet18_cifar", ModelSpec{{3, 224, 224}, 10, "classify"}), 11173962);
  EXPECT_EQ(count("resnet18", ModelSpec{{3, 64, 64}, 10, "classify"}),
            11689512 - 513000 + 5130);  // ImageNet stem
}

// Reference: torchvision.models.vgg*(num_classes=1000). Only these three build the 4096-wide head
// (~0.5 GB each); the other configurations are checked through their features below.
TEST(ParameterCount, VggMatchesTorchvision) {
  EXPECT_EQ(count("vgg11", kImageNet), 132863336);
  EXPECT_EQ(count("vgg16", kImageNet), 138357544);
  EXPECT_EQ(count("vgg16_bn", kImageNet), 138365992);
}

// torchvision's classifier has 123,642,856 parameters; the CIFAR head with 1000 classes has 513,000.
// So features + CIFAR head = torchvision total - 123,642,856 + 513,000 for every configuration.
TEST(ParameterCount, VggFeaturesMatchTorchvision) {
  const int64_t classifier = (25088 * 4096 + 4096) + (4096 * 4096 + 4096) + (4096 * 1000 + 1000);
  EXPECT_EQ(classifier, 123642856);
  const ModelSpec cifar1000{{3, 32, 32}, 1000, "classify"};
  const std::pair<const char*, int64_t> torchvision[] = {
      {"vgg11", 132863336}, {"vgg11_bn", 132868840}, {"vgg13", 133047848}, {"vgg13_bn", 133053736},
      {"vgg16", 138357544}, {"vgg16_bn", 138365992}, {"vgg19", 143667240}, {"vgg19_bn", 143678248}};
  for (const auto& [name, total] : torchvision) {
    EXPECT_EQ(count(name, cifar1000), total - classifier + 513000) << name;
  }
  // CIFAR-10 head: 512x10+10; VGG-16-BN for CIFAR-10 is the well-known 14,728,266.
  EXPECT_EQ(count("vgg16_bn", kCifar10), 14728266);
  EXPECT_EQ(count("vgg11_cifar", ModelSpec{{3, 64, 64}, 10, "classify"}), 132863336 - classifier + 5130);
}

// Reference: Hugging Face BertModel (embeddings + layers + pooler) = 109,482,240 for BERT-base;
// the classifier adds hidden x classes + classes.
// Both models are also run once here, so the shape test need not build BERT-base again.
TEST(ParameterCount, BertBaseMatchesHuggingFace) {
  torch::NoGradGuard no_grad;
  auto ids = torch::randint(1, 30522, {2, 8}, torch::kLong);
  auto cls = make_model("bert_base", ModelSpec{{128}, 2, "classify"});
  EXPECT_EQ(count_parameters(*cls), 109482240 + 768 * 2 + 2);
  cls->eval();
  EXPECT_EQ(cls->forward(ids).sizes(), torch::IntArrayRef({2, 2}));
  cls.reset();
  // BertForMaskedLM: no pooler (590,592), adds transform dense + LayerNorm (592,128) and the decoder
  // bias (30,522); the decoder weight is the word-embedding matrix and is counted once.
  auto mlm = make_model("bert_base", ModelSpec{{128}, 30522, "mlm"});
  EXPECT_EQ(count_parameters(*mlm), 109514298);
  mlm->eval();
  EXPECT_EQ(mlm->forward(ids).sizes(), torch::IntArrayRef({2, 8, 30522}));
}

// bert_tiny (L2/H128/A2): embeddings 30522*128 + 512*128 + 2*128 + 2*128 = 3,972,864;
// per layer 4*(128*128+128) + 2*256 + (128*512+512) + (512*128+128) = 198,272; pooler 16,512.
TEST(ParameterCount, BertTinyFromArchitecture) {
  EXPECT_EQ(count("bert_tiny", ModelSpec{{16}, 2, "classify"}), 3972864 + 2 * 198272 + 16512 + 258);
}

}  // namespace
}  // namespace dynamix
