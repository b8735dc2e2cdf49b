// DYNAMIX — forward+backward throughput (samples/s) of the model zoo at fixed batches.
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "models/registry.h"

namespace {

using dynamix::ModelSpec;

// One training step's compute without the optimizer: forward, cross-entropy, backward.
void bm_forward_backward(benchmark::State& state, const std::string& name, const ModelSpec& spec,
                         int64_t batch) {
  torch::manual_seed(0);
  auto model = dynamix::make_model(name, spec);
  model->train();
  std::vector<int64_t> shape = {batch};
  shape.insert(shape.end(), spec.input_shape.begin(), spec.input_shape.end());
  const bool tokens = name.rfind("bert_", 0) == 0;
  torch::Tensor x = tokens ? torch::randint(1, 30522, shape, torch::kLong) : torch::randn(shape);
  torch::Tensor y = spec.task == "mlm" ? torch::randint(0, spec.num_classes, shape, torch::kLong)
                                       : torch::randint(0, spec.num_classes, {batch}, torch::kLong);
  auto step = [&] {
    model->zero_grad();
    auto logits = model->forward(x);
    auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}));
    loss.backward();
  };
  step();  // warm-up: allocator and first-call costs stay out of the figure
  for (auto _ : state) step();
  state.SetItemsProcessed(state.iterations() * batch);
  state.counters["batch"] = static_cast<double>(batch);
  state.counters["threads"] = static_cast<double>(torch::get_num_threads());
}

const ModelSpec kMnist{{1, 28, 28}, 10, "classify"};
const ModelSpec kCifar{{3, 32, 32}, 10, "classify"};

BENCHMARK_CAPTURE(bm_forward_backward, cnn_b64, "cnn", kMnist, 64)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_forward_backward, mlp_b64, "mlp", kMnist, 64)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_forward_backward, resnet18_cifar_b32, "resnet18_cifar", kCifar, 32)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_forward_backward, vgg11_cifar_b32, "vgg11_cifar", kCifar, 32)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_forward_backward, bert_tiny_L128_b16, "bert_tiny", (ModelSpec{{128}, 2, "classify"}), 16)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_forward_backward, resnet50_224_b4, "resnet50",
                  (ModelSpec{{3, 224, 224}, 1000, "classify"}), 4)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
