// DYNAMIX fuzz targets — the tiny model, optimizer and progress record behind the checkpoint
// fuzzer and its seeds; the archive layout mirrors encode_checkpoint (framework/train/checkpoint.cc).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <sstream>
#include <string>

#include "framework/train/checkpoint.h"
#include "framework/train/foreach_sgd.h"
#include "framework/train/optimizer_archive.h"

namespace dynamix::fuzz {

// Linear + BatchNorm: parameters, and buffers (running stats, an int64 counter) as real models have.
struct TinyNetImpl : torch::nn::Module {
  explicit TinyNetImpl(int64_t out = 2)
      : fc(register_module("fc", torch::nn::Linear(3, out))),
        bn(register_module("bn", torch::nn::BatchNorm1d(out))) {}
  torch::Tensor forward(const torch::Tensor& x) { return bn(fc(x)); }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
};
TORCH_MODULE(TinyNet);

// A model and its optimizer, of the classes make_optimizer gives `dynamix train` (their load() is
// the one checkpoints go through), as a run holds them after one step (so the optimizer has state).
struct TinyRun {
  explicit TinyRun(int64_t out = 2, bool adam = false, bool float64 = false) : model(out) {
    if (float64) model->to(torch::kFloat64);
    if (adam) {
      optimizer = std::make_unique<PortableAdamW>(model->parameters(), torch::optim::AdamWOptions(1e-3));
    } else {
      optimizer =
          std::make_unique<ForeachSgd>(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
    }
  }
  // One training step on a fixed batch; throws c10::Error if model and optimizer state disagree.
  void step() {
    const auto dtype = model->fc->weight.scalar_type();
    const torch::Tensor x = torch::linspace(-1, 1, 12, torch::TensorOptions().dtype(dtype)).reshape({4, 3});
    optimizer->zero_grad();
    model->forward(x).square().mean().backward();
    optimizer->step();
  }
  TinyNet model;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
};

inline TrainProgress tiny_progress(int64_t world) {
  TrainProgress p;
  p.step = 7;
  p.epoch = 1;
  p.cursor = 24;
  p.world_size = world;
  p.plan.assign(static_cast<size_t>(world), 4);
  p.elapsed_s = 1.5;
  p.samples_seen = 28;
  p.windows = 1;
  p.model = "tiny";
  p.optimizer = "sgd";
  p.policy = "static";
  p.policy_state = "{}";
  for (int64_t r = 0; r < world; ++r) p.rng_states.push_back(generator_state());
  return p;
}

}  // namespace dynamix::fuzz
