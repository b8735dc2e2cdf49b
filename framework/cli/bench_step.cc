// DYNAMIX — `dynamix bench step`: one rank, the framework's step (sampler, data loading and upload,
// forward/backward, bucketed weighted allreduce path, optimizer, statistics) vs a bare LibTorch loop
// on the same model, batch, optimizer, device, precision and layout, whose batches are made before
// timing and wait on the device (as scripts/gpu/pytorch_loop.py's): the ratio counts what the
// framework's data path fails to hide. Repeats alternate between the two to share machine noise.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

#include "framework/cli/commands.h"
#include "framework/comm/mpi_communicator.h"
#include "framework/comm/mpi_runtime.h"
#include "framework/core/clock.h"
#include "framework/core/error.h"
#include "framework/core/stats.h"
#include "framework/train/precision.h"
#include "framework/train/trainer.h"
#include "models/registry.h"

namespace dynamix {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kBareBatches = 4;

const char* kDefaultConfig = R"(
model: cnn
dataset: {name: synthetic, shape: [1, 28, 28], classes: 10, train_size: 8192, test_size: 256}
batch: {init: 64}
train: {optimizer: sgd, lr: 0.01, momentum: 0.9, max_steps: 1000000, epochs: 1000}
output: {dir: runs/bench_step}
)";

}  // namespace

int run_bench_step(const BenchStepCommand& cmd, int* argc, char*** argv) {
  MpiRuntime runtime(argc, argv);
  MpiCommunicator comm;
  if (comm.size() != 1) {
    if (comm.rank() == 0) std::fprintf(stderr, "dynamix: error: bench step runs on 1 rank\n");
    return 2;
  }
  try {
    Config config = cmd.config.empty() ? parse_config(kDefaultConfig, "bench step default", cmd.overrides)
                                       : load_config(cmd.config, cmd.overrides);
    TrainOptions opts;
    opts.quiet = true;
    opts.write_outputs = false;
    Trainer trainer(config, comm, opts);
    trainer.setup();
    trainer.prepare();

    // The bare loop: same architecture, device, precision, layout, optimizer (train.optimizer) and
    // samples, loaded before timing; nothing else (fp16: the loss scaled, gradients unscaled and
    // checked as PyTorch's GradScaler does, with a fixed scale).
    torch::manual_seed(config.train.seed);
    ModelSpec spec{trainer.train_set().sample_shape(), trainer.train_set().num_classes(),
                   trainer.train_set().task(), trainer.train_set().input_cardinality()};
    ModelPtr bare = make_model(config.model, spec);
    const torch::Device device = trainer.device();
    bare->to(device);
    if (config.train.channels_last) to_channels_last(*bare);
    auto bare_opt = make_optimizer(config.train, bare->parameters());
    const bool fp16 = config.train.precision == Precision::kFp16;
    const double kBareScale = 65536.0;
    auto found_inf = torch::zeros({1}, torch::TensorOptions().device(device));
    const auto inv_scale = torch::full({1}, 1.0 / kBareScale, torch::TensorOptions().device(device));
    const int64_t b = trainer.plan()[0];
    const int64_t n = trainer.train_set().size();
    std::vector<Batch> ready;  // a few distinct batches, already on the device
    for (int64_t k = 0; k < kBareBatches; ++k) {
      std::vector<int64_t> idx(static_cast<size_t>(b));
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = (k * b + static_cast<int64_t>(i)) % n;
      Batch batch = trainer.train_set().get(idx, 0);
      ready.push_back({batch.inputs.to(device), batch.targets.to(device)});
    }
    size_t next = 0;
    auto bare_step = [&] {
      const Batch& batch = ready[next++ % ready.size()];
      bare_opt->zero_grad();
      auto logits = forward_logits(*bare, batch.inputs, config.train);
      auto loss = torch::nn::functional::cross_entropy(logits, batch.targets);
      if (fp16) {
        (loss * kBareScale).backward();
        std::vector<torch::Tensor> grads;
        for (const auto& p : bare->parameters()) {
          if (p.grad().defined()) grads.push_back(p.grad());
        }
        at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
      } else {
        loss.backward();
      }
      bare_opt->step();
      (void)loss.item<double>();  // waits for the step's kernels (GPU)
    };
    for (int i = 0; i < cmd.warmup; ++i) {
      trainer.step();
      bare_step();
    }
    std::vector<double> fw, raw;
    for (int r = 0; r < cmd.repeats; ++r) {
      auto t0 = Clock::now();
      for (int i = 0; i < cmd.steps; ++i) trainer.step();
      fw.push_back(seconds_since(t0) / cmd.steps);
      t0 = Clock::now();
      for (int i = 0; i < cmd.steps; ++i) bare_step();
      raw.push_back(seconds_since(t0) / cmd.steps);
    }
    const double f = median(fw), r = median(raw);
    std::printf(
        "# dynamix bench step: model %s, batch %lld, optimizer %s, device %s, precision %s%s, %d threads, %d "
        "x %d "
        "steps\n",
        config.model.c_str(), static_cast<long long>(b), choice_name(config.train.optimizer),
        device.str().c_str(), choice_name(config.train.precision),
        config.train.channels_last ? ", channels_last" : "", torch::get_num_threads(), cmd.repeats,
        cmd.steps);
    std::printf("%-12s %12s %14s\n", "loop", "step(ms)", "samples/s");
    std::printf("%-12s %12.3f %14.1f\n", "dynamix", f * 1e3, b / f);
    std::printf("%-12s %12.3f %14.1f\n", "bare", r * 1e3, b / r);
    std::printf("ratio dynamix/bare = %.4f (goal <= 1.03)\n", f / r);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dynamix: error: %s\n", brief_error(e).c_str());
    return 2;
  }
  return 0;
}

}  // namespace dynamix
