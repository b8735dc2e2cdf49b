// DYNAMIX — VGG-11/13/16/19, with or without BatchNorm, with an ImageNet or CIFAR head.
#include "models/vgg.h"

#include "framework/core/error.h"
#include "models/torchvision_init.h"

namespace dynamix {
namespace {

namespace nn = torch::nn;

constexpr int64_t kPool = 0;  // "M" in torchvision's feature configurations

const std::vector<int64_t>& features_config(int depth) {
  // clang-format off
  static const std::vector<int64_t> a = {64, kPool, 128, kPool, 256, 256, kPool, 512, 512, kPool, 512, 512, kPool};
  static const std::vector<int64_t> b = {64, 64, kPool, 128, 128, kPool, 256, 256, kPool, 512, 512, kPool,
                                         512, 512, kPool};
  static const std::vector<int64_t> d = {64, 64, kPool, 128, 128, kPool, 256, 256, 256, kPool, 512, 512, 512,
                                         kPool, 512, 512, 512, kPool};
  static const std::vector<int64_t> e = {64, 64, kPool, 128, 128, kPool, 256, 256, 256, 256, kPool, 512, 512,
                                         512, 512, kPool, 512, 512, 512, 512, kPool};
  // clang-format on
  switch (depth) {
    case 11:
      return a;
    case 13:
      return b;
    case 16:
      return d;
    case 19:
      return e;
    default:
      throw Error("VGG depth " + std::to_string(depth) + " is not one of 11, 13, 16, 19");
  }
}

class Vgg : public Model {
 public:
  Vgg(int depth, bool batch_norm, bool imagenet_head, int64_t channels, int64_t num_classes)
      : imagenet_head_(imagenet_head) {
    features_ = register_module("features", nn::Sequential());
    int64_t in = channels;
    for (int64_t v : features_config(depth)) {
      if (v == kPool) {
        features_->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(2).stride(2)));
        continue;
      }
      features_->push_back(nn::Conv2d(nn::Conv2dOptions(in, v, 3).padding(1)));  // bias kept even with BN
      if (batch_norm) features_->push_back(nn::BatchNorm2d(v));
      features_->push_back(nn::ReLU());
      in = v;
    }
    classifier_ = register_module("classifier", nn::Sequential());
    if (imagenet_head) {
      classifier_->push_back(nn::Linear(512 * 7 * 7, 4096));
      classifier_->push_back(nn::ReLU());
      classifier_->push_back(nn::Dropout(0.5));
      classifier_->push_back(nn::Linear(4096, 4096));
      classifier_->push_back(nn::ReLU());
      classifier_->push_back(nn::Dropout(0.5));
      classifier_->push_back(nn::Linear(4096, num_classes));
    } else {
      classifier_->push_back(nn::Linear(512, num_classes));
    }
    torchvision_init(*this, /*linear_std=*/0.01);
  }

  torch::Tensor forward(torch::Tensor x) override {
    x = features_->forward(x);
    x = torch::adaptive_avg_pool2d(x,
                                   imagenet_head_ ? std::vector<int64_t>{7, 7} : std::vector<int64_t>{1, 1});
    return classifier_->forward(x.flatten(1));
  }

 private:
  bool imagenet_head_;
  nn::Sequential features_{nullptr};
  nn::Sequential classifier_{nullptr};
};

}  // namespace

ModelPtr make_vgg(int depth, bool batch_norm, bool cifar_head, const ModelSpec& spec) {
  const bool imagenet_head = !cifar_head && spec.input_shape.at(1) >= 64;
  return std::make_shared<Vgg>(depth, batch_norm, imagenet_head, spec.input_shape.at(0), spec.num_classes);
}

}  // namespace dynamix
