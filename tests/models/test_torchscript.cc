// DYNAMIX — TorchScript models: the state is shared with the scripted code, modes and moves reach
// it, checkpoints round-trip, and errors are one clean line naming the file.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "framework/core/error.h"
#include "models/registry.h"
#include "models/torchscript.h"
#include "tests/models/scripted_bn_net.h"

namespace dynamix {
namespace {

namespace fs = std::filesystem;

class TorchScriptModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dynamix_ts_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    path_ = (dir_ / "net.pt").string();
    torch::manual_seed(0);
    testing::scripted_bn_net().save(path_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ModelPtr load() {
    return make_model(std::string(kTorchScriptPrefix) + path_, ModelSpec{{4}, 3, "classify"});
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(TorchScriptModelTest, StateHasTheScriptedNamesAndIsShared) {
  auto m = load();
  std::vector<std::string> params, buffers;
  for (const auto& p : m->named_parameters()) params.push_back(p.key());
  for (const auto& b : m->named_buffers()) buffers.push_back(b.key());
  EXPECT_EQ(params, (std::vector<std::string>{"lin.weight", "lin.bias", "bn.weight", "bn.bias"}));
  EXPECT_EQ(buffers,
            (std::vector<std::string>{"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"}));
  EXPECT_TRUE(m->has_own_loss());

  // An update of the registered parameter is what the scripted forward computes with.
  m->eval();
  const auto x = torch::randn({5, 4});
  const auto before = m->forward(x);
  {
    torch::NoGradGuard no_grad;
    m->named_parameters()["bn.bias"].add_(1.0);  // the last op: adds 1 to the outputs
  }
  EXPECT_TRUE(torch::allclose(m->forward(x), before + 1.0));

  // Gradients reach the registered parameters; the loss is a scalar.
  m->train();
  auto loss = m->forward_loss(x, torch::tensor({0, 1, 2, 0, 1}));
  EXPECT_EQ(loss.dim(), 0);
  loss.backward();
  for (const auto& p : m->parameters()) EXPECT_TRUE(p.grad().defined());
}

TEST_F(TorchScriptModelTest, TrainAndEvalReachBatchNorm) {
  auto m = load();
  auto mean = m->named_buffers()["bn.running_mean"];
  const auto x = torch::randn({8, 4}) + 3.0;
  m->eval();
  torch::NoGradGuard no_grad;
  m->forward(x);
  EXPECT_TRUE(torch::equal(mean, torch::zeros({3}))) << "eval mode updated the running statistics";
  m->train();
  m->forward(x);
  EXPECT_FALSE(torch::equal(mean, torch::zeros({3}))) << "train mode did not reach the scripted BatchNorm";
}

TEST_F(TorchScriptModelTest, DtypeMoveKeepsSharing) {
  auto m = load();
  m->to(torch::kFloat64);
  m->eval();
  const auto x = torch::randn({2, 4}, torch::kFloat64);
  const auto out = m->forward(x);  // the scripted code sees float64 weights, or it would throw
  EXPECT_EQ(out.scalar_type(), torch::kFloat64);
  torch::NoGradGuard no_grad;
  m->named_parameters()["bn.bias"].add_(1.0);  // the last op: adds 1 to the outputs
  EXPECT_TRUE(torch::allclose(m->forward(x), out + 1.0));
}

TEST_F(TorchScriptModelTest, ArchiveRoundTripReachesTheScriptedCode) {
  auto a = load(), b = load();
  {
    torch::NoGradGuard no_grad;
    for (auto& p : a->parameters()) p.mul_(2.0);
    a->named_buffers()["bn.running_mean"].fill_(0.5);
  }
  torch::serialize::OutputArchive out;
  a->save(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  torch::serialize::InputArchive in;
  std::istringstream read(bytes.str());
  in.load_from(read);
  b->load(in);
  a->eval();
  b->eval();
  const auto x = torch::randn({3, 4});
  EXPECT_TRUE(torch::equal(a->forward(x), b->forward(x)));
}

TEST_F(TorchScriptModelTest, TiedWeightsAreOneParameter) {
  torch::jit::Module a = testing::scripted_module("A"), b = testing::scripted_module("B"),
                     net = testing::scripted_module("Tied");
  const auto w = torch::randn({3, 3});
  a.register_parameter("weight", w, false);
  b.register_parameter("weight", w, false);
  net.register_module("a", a);
  net.register_module("b", b);
  net.define("def forward(self, x):\n    return torch.mm(torch.mm(x, self.a.weight), self.b.weight)\n");
  const std::string path = (dir_ / "tied.pt").string();
  net.save(path);
  auto m = make_model("torchscript:" + path, ModelSpec{{3}, 3});
  ASSERT_EQ(m->named_parameters().size(), 1u);
  EXPECT_EQ(m->named_parameters().keys()[0], "a.weight");
}

TEST_F(TorchScriptModelTest, ErrorsAreOneLineNamingTheFile) {
  auto one_line_error = [](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error; expected " << needle;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(needle), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_EQ(what.find("Traceback"), std::string::npos) << what;
    }
  };
  const std::string missing = (dir_ / "missing.pt").string();
  one_line_error(
      [&] {
        make_model("torchscript:" + missing, ModelSpec{{4}, 3});
      },
      missing + "': no such file");
  const std::string text = (dir_ / "text.pt").string();
  std::ofstream(text) << "not a model\n";
  one_line_error([&] { make_model("torchscript:" + text, ModelSpec{{4}, 3}); }, "not a TorchScript file");
  auto m = load();
  one_line_error([&] { m->forward(torch::randn({2, 7})); }, "forward failed: RuntimeError: ");
}

}  // namespace
}  // namespace dynamix
