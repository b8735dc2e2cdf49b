// DYNAMIX — BatchNorm running statistics (mpirun -np 2): each rank's drift apart in training; before
// an evaluation or a checkpoint every rank holds their average weighted by its batch, b_i / B, bit
// for bit, from one SUM allreduce; integer buffers stay; a model without buffers adds no collective.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <unistd.h>

#include <filesystem>
#include <utility>
#include <vector>

#include "framework/comm/mpi_communicator.h"
#include "framework/train/trainer.h"
#include "tests/models/scripted_bn_net.h"

namespace dynamix {
namespace {

namespace fs = std::filesystem;

// Forwards to another communicator and records every SUM allreduce (elements, dtype).
class RecordingCommunicator final : public Communicator {
 public:
  explicit RecordingCommunicator(Communicator& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend() const override { return inner_.backend(); }
  void allreduce_sum(void* buffer, size_t count, DType dtype) override {
    sums.emplace_back(count, dtype);
    inner_.allreduce_sum(buffer, count, dtype);
  }
  void allreduce_max(void* buffer, size_t count, DType dtype) override {
    inner_.allreduce_max(buffer, count, dtype);
  }
  void broadcast(void* buffer, size_t count, DType dtype, int root) override {
    inner_.broadcast(buffer, count, dtype, root);
  }
  void gather(const void* send, size_t bytes, void* recv, int root) override {
    inner_.gather(send, bytes, recv, root);
  }
  void allgather(const void* send, size_t bytes, void* recv) override { inner_.allgather(send, bytes, recv); }
  void barrier() override { inner_.barrier(); }

  std::vector<std::pair<size_t, DType>> sums;

 private:
  Communicator& inner_;
};

class BufferAveraging : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(mpi_.size(), 2) << "run with mpirun -np 2";
    dir_ = fs::temp_directory_path() / ("dynamix_bufavg_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    path_ = (dir_ / "bn.pt").string();
    torch::manual_seed(0);
    testing::scripted_bn_net().save(path_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Trainer> trainer(const std::string& model) {
    TrainOptions opts;
    opts.write_outputs = false;
    opts.quiet = true;
    const std::string config = "model: " + model + R"(
dataset: {name: synthetic, shape: [4], classes: 3, train_size: 300, test_size: 20}
batch: {init: [3, 9], min: 1, max: 64}
train: {optimizer: sgd, lr: 0.1, momentum: 0.9}
policy: {name: static}
monitor: {enabled: false}
output: {dir: unused}
)";
    auto t = std::make_unique<Trainer>(parse_config(config, "test"), comm_, opts);
    t->setup();
    t->prepare();
    return t;
  }

  // This rank's floating-point buffers (float32), one after another; `all`: every rank's.
  static torch::Tensor float_buffers(Model& m) {
    std::vector<torch::Tensor> parts;
    for (const auto& b : m.buffers()) {
      if (b.is_floating_point()) parts.push_back(b.reshape(-1));
    }
    return torch::cat(parts).contiguous();
  }
  std::vector<torch::Tensor> all_ranks(const torch::Tensor& mine) {
    torch::Tensor all = torch::empty({2, mine.numel()}, mine.options());
    mpi_.allgather(mine.data_ptr(), mine.nbytes(), all.data_ptr());
    return {all[0], all[1]};
  }

  MpiCommunicator mpi_;
  RecordingCommunicator comm_{mpi_};
  fs::path dir_;
  std::string path_;
};

TEST_F(BufferAveraging, EvaluationAndCheckpointSeeTheBatchWeightedAverage) {
  auto t = trainer("torchscript:" + path_);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(t->step());
  ASSERT_EQ(t->last_assignment().counts, (std::vector<int32_t>{3, 9}));
  const auto before = all_ranks(float_buffers(t->model()));
  ASSERT_EQ(before[0].numel(), 6);
  EXPECT_FALSE(torch::equal(before[0], before[1])) << "each rank's statistics follow its own batches";
  // What the trainer computes: sum_i (b_i / B) x_i in float64 (2 ranks: a commutative sum), rounded.
  const torch::Tensor want =
      (before[0].to(torch::kFloat64) * (3 / 12.0) + before[1].to(torch::kFloat64) * (9 / 12.0))
          .to(torch::kFloat32);

  comm_.sums.clear();
  t->evaluate();
  // One allreduce of the 6 statistics, then the evaluation's sums (3, and 2 ranks' shares and times).
  EXPECT_EQ(comm_.sums, (std::vector<std::pair<size_t, DType>>{{6, DType::kFloat64}, {7, DType::kFloat64}}));
  const auto after = all_ranks(float_buffers(t->model()));
  EXPECT_TRUE(torch::equal(after[0], want)) << after[0] << want;
  EXPECT_TRUE(torch::equal(after[1], want));
  auto tracked = t->model().named_buffers()["bn.num_batches_tracked"];
  EXPECT_EQ(tracked.scalar_type(), torch::kInt64);
  EXPECT_EQ(tracked.item<int64_t>(), 3);  // integer buffers are left as they are (equal anyway)

  // A checkpoint at the same step: already averaged, not again (no second rounding).
  comm_.sums.clear();
  t->save_checkpoint();
  EXPECT_TRUE(comm_.sums.empty());
  EXPECT_TRUE(torch::equal(float_buffers(t->model()), want));

  // After another step the ranks drift again, and a checkpoint averages them.
  ASSERT_TRUE(t->step());
  const auto drifted = all_ranks(float_buffers(t->model()));
  EXPECT_FALSE(torch::equal(drifted[0], drifted[1]));
  comm_.sums.clear();
  t->save_checkpoint();
  EXPECT_EQ(comm_.sums, (std::vector<std::pair<size_t, DType>>{{6, DType::kFloat64}}));
  const auto synced = all_ranks(float_buffers(t->model()));
  EXPECT_TRUE(torch::equal(synced[0], synced[1]));
}

TEST_F(BufferAveraging, ModelWithoutBuffersAddsNoCollective) {
  auto t = trainer("mlp");
  ASSERT_TRUE(t->model().buffers().empty());
  ASSERT_TRUE(t->step());
  comm_.sums.clear();
  const Trainer::Evaluation e = t->evaluate();
  // The evaluation's sums, with each of the 2 ranks' test samples and seconds.
  EXPECT_EQ(comm_.sums, (std::vector<std::pair<size_t, DType>>{{7, DType::kFloat64}}));
  // The 20 test samples are shared as the plan [3, 9] shares the batch.
  EXPECT_EQ(e.samples, (std::vector<int64_t>{5, 15}));
  ASSERT_EQ(e.seconds.size(), 2u);
  EXPECT_GT(e.seconds[0], 0.0);
  EXPECT_GT(e.seconds[1], 0.0);
}

}  // namespace
}  // namespace dynamix
