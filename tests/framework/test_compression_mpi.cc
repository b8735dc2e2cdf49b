// DYNAMIX — comm.compression on the trainer's gradient path (4 ranks): hlc on dense gradients
// chooses the dense path by itself and trains like no compression (to float rounding: its sums
// are correctly rounded where MPI's are not); fp16 halves the bytes on the wire and stays within
// half precision.
#include <gtest/gtest.h>

#include "framework/comm/mpi_communicator.h"
#include "framework/comm/watchdog.h"
#include "framework/train/trainer.h"

namespace dynamix {
namespace {

const char* kCompressionConfig = R"(
model: mlp
dataset: {name: synthetic, shape: [1, 8, 8], classes: 3, train_size: 4000, test_size: 40}
batch: {init: [5, 17, 32, 64], min: 1, max: 128}
train: {max_steps: 5, epochs: 100, lr: 0.05}
monitor: {enabled: false}  # probes have their own tests; keep this one about the math
output: {dir: unused}
)";

std::vector<torch::Tensor> train_with(const std::string& compression, Communicator& comm) {
  TrainOptions opts;
  opts.write_outputs = false;
  opts.quiet = true;
  Trainer t(parse_config(kCompressionConfig, "test", {"comm.compression=" + compression}), comm, opts);
  t.setup();
  t.prepare();
  for (int i = 0; i < 5; ++i) t.step();
  std::vector<torch::Tensor> out;
  for (const auto& p : t.model().parameters()) out.push_back(p.detach().clone());
  return out;
}

double max_rel_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, ((a[i] - b[i]).abs().max() / (b[i].abs().max() + 1e-12)).item<double>());
  }
  return worst;
}

TEST(CompressionInTrainer, HlcPicksDenseForDenseGradientsAndFp16StaysClose) {
  MpiCommunicator comm;
  ASSERT_EQ(comm.size(), 4) << "run with mpirun -np 4";
  const auto dense = train_with("none", comm);
  EXPECT_LT(max_rel_diff(train_with("hlc", comm), dense), 1e-6);
  const double fp16 = max_rel_diff(train_with("fp16", comm), dense);
  EXPECT_GT(fp16, 0.0);   // the codec really ran
  EXPECT_LT(fp16, 2e-2);  // 5 steps at half precision
}

TEST(CompressionInTrainer, Fp16HalvesTheWireBytesAndHlcPicksDense) {
  MpiCommunicator comm;
  auto param = torch::ones({1000}, torch::requires_grad());
  param.mutable_grad() = torch::full({1000}, 0.5);
  GradBuckets dense({param}, 25.0, comm);
  GradBuckets half({param}, 25.0, comm, make_codec(Compression::kFp16));
  const ReduceResult d = dense.reduce(0.25);
  param.mutable_grad().fill_(0.5);
  const ReduceResult h = half.reduce(0.25);
  EXPECT_EQ(d.wire_bytes, 4000u);
  EXPECT_EQ(h.wire_bytes, 2000u);
  EXPECT_EQ(h.codec.path, "fp16");
  EXPECT_FLOAT_EQ(param.grad()[0].item<float>(), 0.5f);  // 4 ranks x 0.25 x 0.5
  GradBuckets hlc({param}, 25.0, comm, make_codec(Compression::kHlc));
  param.mutable_grad().fill_(0.5);
  const ReduceResult c = hlc.reduce(0.25);
  EXPECT_EQ(c.codec.path, "dense");  // a dense gradient: compression would not pay
  EXPECT_FLOAT_EQ(param.grad()[7].item<float>(), 0.5f);
}

// The trainer under `dynamix train` talks to a WatchedCommunicator, not to MpiCommunicator itself:
// every codec must work through the interface alone (issue #17).
TEST(CompressionInTrainer, EveryCodecWorksBehindTheWatchdogWrapper) {
  MpiCommunicator mpi;
  WatchedCommunicator comm(mpi, nullptr);
  for (const char* name : {"none", "fp16", "bf16", "hlc"}) {
    auto codec = make_codec(parse_choice<Compression>(name, "comm.compression"));
    std::vector<float> g(1000, 0.5f);
    g[3] = 0.25f * (comm.rank() + 1);
    CodecStats stats;
    codec->allreduce_sum(g.data(), g.size(), comm, &stats);
    EXPECT_FLOAT_EQ(g[0], 0.5f * comm.size()) << name;
    EXPECT_FLOAT_EQ(g[3], 0.125f * comm.size() * (comm.size() + 1)) << name;
  }
}

}  // namespace
}  // namespace dynamix
