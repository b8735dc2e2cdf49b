// DYNAMIX — numeric precision and memory layout of a training step: autocast to bfloat16 or
// float16 (CUDA) around forward (parameters, gradients, buckets and optimizer stay float32;
// float16 needs loss scaling, see loss_scaler.h), and
// channels_last for 4-D weights and inputs (CNNs; faster convolutions on GPUs and oneDNN).
#pragma once

#include <torch/torch.h>

#include "framework/config/config.h"
#include "models/model.h"

namespace dynamix {

// While alive, eligible ops (matmuls, convolutions) on `device`'s type run in `precision`
// (bf16, or fp16 on CUDA); fp32 does nothing. Restores the previous autocast state and clears its cast
// cache.
class AutocastScope {
 public:
  AutocastScope(Precision precision, torch::DeviceType device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  torch::DeviceType device_ = torch::kCPU;
  bool previous_enabled_ = false;
  at::ScalarType previous_dtype_ = at::kBFloat16;
};

// Converts the module's 4-D parameters and buffers to channels_last, in place (the tensors stay
// the same objects, so optimizers and hooks keep pointing at them).
void to_channels_last(torch::nn::Module& module);
// A 4-D input in channels_last; anything else unchanged.
torch::Tensor channels_last_input(const torch::Tensor& input);

// The model's forward as `train` configures it (input layout, autocast on the inputs' device);
// bf16/fp16 logits come back
// as float32 so that the loss is computed in float32.
torch::Tensor forward_logits(Model& model, const torch::Tensor& inputs, const TrainConfig& train);
// The model's own loss of (inputs, targets) (`train.loss: module`) in the same way, as float32.
torch::Tensor forward_own_loss(Model& model, const torch::Tensor& inputs, const torch::Tensor& targets,
                               const TrainConfig& train);

}  // namespace dynamix
