// DYNAMIX — the model interface every network in models/ implements, and what it is built from.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dynamix {

// What a model is built for: the per-sample input shape and the output size.
struct ModelSpec {
  std::vector<int64_t> input_shape;        // per sample: {C,H,W} images, {seq_len} tokens
  int64_t num_classes = 10;                // classes; for task "mlm" the vocab size
  std::string task = "classify";           // "classify" | "mlm"
  std::vector<int64_t> input_cardinality;  // ids per input column (embedding models: users, items)
};

// A trainable network with one tensor in and logits out.
class Model : public torch::nn::Module {
 public:
  // Logits: [N, num_classes] for classify, [N, L, vocab] for mlm.
  virtual torch::Tensor forward(torch::Tensor x) = 0;
  // Whether forward_loss exists (`train.loss: module`): the model computes its own loss.
  virtual bool has_own_loss() const { return false; }
  // The model's mean loss over the batch for targets y (a scalar); throws where has_own_loss() is false.
  virtual torch::Tensor forward_loss(torch::Tensor x, torch::Tensor y);
};

using ModelPtr = std::shared_ptr<Model>;

// Number of scalar parameters (buffers such as BatchNorm running statistics excluded).
int64_t count_parameters(const torch::nn::Module& m);

}  // namespace dynamix
