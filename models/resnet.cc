// DYNAMIX — ResNet-18/34/50/101 with the torchvision layout and an ImageNet or CIFAR stem.
#include "models/resnet.h"

#include "framework/core/error.h"
#include "models/torchvision_init.h"

namespace dynamix {
namespace {

namespace nn = torch::nn;

nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(k / 2).bias(false));
}

// A residual block; the 1x1 projection on the shortcut exists when the shape changes.
class Block : public nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;

 protected:
  void make_downsample(int64_t in, int64_t out, int64_t stride) {
    if (stride == 1 && in == out) return;
    downsample_ =
        register_module("downsample", nn::Sequential(conv(in, out, 1, stride), nn::BatchNorm2d(out)));
  }
  torch::Tensor shortcut(const torch::Tensor& x) { return downsample_ ? downsample_->forward(x) : x; }

 private:
  nn::Sequential downsample_{nullptr};
};

// Two 3x3 convs (ResNet-18/34).
class BasicBlock : public Block {
 public:
  static constexpr int64_t kExpansion = 1;
  BasicBlock(int64_t in, int64_t planes, int64_t stride)
      : conv1_(register_module("conv1", conv(in, planes, 3, stride))),
        bn1_(register_module("bn1", nn::BatchNorm2d(planes))),
        conv2_(register_module("conv2", conv(planes, planes, 3, 1))),
        bn2_(register_module("bn2", nn::BatchNorm2d(planes))) {
    make_downsample(in, planes, stride);
  }
  torch::Tensor forward(torch::Tensor x) override {
    torch::Tensor y = torch::relu(bn1_->forward(conv1_->forward(x)));
    y = bn2_->forward(conv2_->forward(y));
    return torch::relu(y + shortcut(x));
  }

 private:
  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  nn::Conv2d conv2_;
  nn::BatchNorm2d bn2_;
};

// 1x1 reduce, 3x3 (carrying the stride, as torchvision's "v1.5"), 1x1 expand x4 (ResNet-50/101).
class Bottleneck : public Block {
 public:
  static constexpr int64_t kExpansion = 4;
  Bottleneck(int64_t in, int64_t planes, int64_t stride)
      : conv1_(register_module("conv1", conv(in, planes, 1, 1))),
        bn1_(register_module("bn1", nn::BatchNorm2d(planes))),
        conv2_(register_module("conv2", conv(planes, planes, 3, stride))),
        bn2_(register_module("bn2", nn::BatchNorm2d(planes))),
        conv3_(register_module("conv3", conv(planes, planes * kExpansion, 1, 1))),
        bn3_(register_module("bn3", nn::BatchNorm2d(planes * kExpansion))) {
    make_downsample(in, planes * kExpansion, stride);
  }
  torch::Tensor forward(torch::Tensor x) override {
    torch::Tensor y = torch::relu(bn1_->forward(conv1_->forward(x)));
    y = torch::relu(bn2_->forward(conv2_->forward(y)));
    y = bn3_->forward(conv3_->forward(y));
    return torch::relu(y + shortcut(x));
  }

 private:
  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  nn::Conv2d conv2_;
  nn::BatchNorm2d bn2_;
  nn::Conv2d conv3_;
  nn::BatchNorm2d bn3_;
};

class ResNet : public Model {
 public:
  template <typename B>
  static std::shared_ptr<ResNet> build(const std::vector<int64_t>& blocks, int64_t channels,
                                       bool imagenet_stem, int64_t num_classes) {
    auto net = std::make_shared<ResNet>(channels, imagenet_stem);
    int64_t in = 64;
    const int64_t planes[4] = {64, 128, 256, 512};
    for (int stage = 0; stage < 4; ++stage) {
      auto list = net->register_module("layer" + std::to_string(stage + 1), nn::ModuleList());
      for (int64_t i = 0; i < blocks[stage]; ++i) {
        auto block = std::make_shared<B>(in, planes[stage], (stage > 0 && i == 0) ? 2 : 1);
        list->push_back(block);
        net->blocks_.push_back(block);
        in = planes[stage] * B::kExpansion;
      }
    }
    net->fc_ = net->register_module("fc", nn::Linear(in, num_classes));
    torchvision_init(*net, std::nullopt);  // fc keeps LibTorch's default, as in torchvision
    return net;
  }

  ResNet(int64_t channels, bool imagenet_stem) : imagenet_stem_(imagenet_stem) {
    conv1_ = register_module("conv1", imagenet_stem ? conv(channels, 64, 7, 2) : conv(channels, 64, 3, 1));
    bn1_ = register_module("bn1", nn::BatchNorm2d(64));
  }

  torch::Tensor forward(torch::Tensor x) override {
    x = torch::relu(bn1_->forward(conv1_->forward(x)));
    if (imagenet_stem_) x = torch::max_pool2d(x, 3, 2, 1);
    for (auto& b : blocks_) x = b->forward(x);
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc_->forward(x);
  }

 private:
  bool imagenet_stem_;
  nn::Conv2d conv1_{nullptr};
  nn::BatchNorm2d bn1_{nullptr};
  std::vector<std::shared_ptr<Block>> blocks_;
  nn::Linear fc_{nullptr};
};

}  // namespace

ModelPtr make_resnet(int depth, bool cifar_stem, const ModelSpec& spec) {
  const int64_t channels = spec.input_shape.at(0), height = spec.input_shape.at(1);
  const bool imagenet_stem = !cifar_stem && height >= 64;
  switch (depth) {
    case 18:
      return ResNet::build<BasicBlock>({2, 2, 2, 2}, channels, imagenet_stem, spec.num_classes);
    case 34:
      return ResNet::build<BasicBlock>({3, 4, 6, 3}, channels, imagenet_stem, spec.num_classes);
    case 50:
      return ResNet::build<Bottleneck>({3, 4, 6, 3}, channels, imagenet_stem, spec.num_classes);
    case 101:
      return ResNet::build<Bottleneck>({3, 4, 23, 3}, channels, imagenet_stem, spec.num_classes);
    default:
      throw Error("ResNet depth " + std::to_string(depth) + " is not one of 18, 34, 50, 101");
  }
}

}  // namespace dynamix
