// Optimizer state read from LibTorch's optimizer archive whichever LibTorch wrote it
// (framework/train/optimizer_archive.h): 1.13 names parameters by hex addresses, 2.x by decimal
// ones, and 2.x's own loader left null states for a 1.13 checkpoint.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/optimizer_state.h"
#include "framework/train/foreach_sgd.h"
#include "framework/train/optimizer_archive.h"

namespace dynamix {
namespace {

using torch::optim::SGDOptions;
using torch::optim::SGDParamState;
using torch::serialize::InputArchive;
using torch::serialize::OutputArchive;

std::vector<torch::Tensor> make_params(int64_t seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> ps;
  for (auto shape : {std::vector<int64_t>{4, 3}, {3}, {2, 2, 2}})
    ps.push_back(torch::randn(shape).requires_grad_(true));
  return ps;
}

void step_with_grads(torch::optim::Optimizer& opt, std::vector<torch::Tensor>& ps, int k) {
  torch::manual_seed(50 + k);
  for (auto& p : ps) p.mutable_grad() = torch::randn(p.sizes());
  opt.step();
}

InputArchive reopened(OutputArchive& out) {
  std::ostringstream bytes;
  out.save_to(bytes);
  std::istringstream in(bytes.str());
  InputArchive ar;
  ar.load_from(in);
  return ar;
}

// LibTorch's optimizer archive (one SGD group) with parameter k named name(k) and momentum
// buffers for the parameters in `buffers` that are defined.
template <class Name>
InputArchive sgd_archive(const std::vector<torch::Tensor>& buffers, Name name) {
  OutputArchive ar;
  ar.write("pytorch_version", c10::IValue("1.5.0"));
  OutputArchive state(ar.compilation_unit());
  for (size_t k = 0; k < buffers.size(); ++k) {
    if (!buffers[k].defined()) continue;
    OutputArchive one(ar.compilation_unit());
    one.write("momentum_buffer", c10::IValue(buffers[k]));
    state.write(name(k), one);
  }
  ar.write("state", state);
  OutputArchive groups(ar.compilation_unit()), group(ar.compilation_unit()), options(ar.compilation_unit());
  groups.write("param_groups/size", torch::tensor(int64_t{1}));
  group.write("params/size", torch::tensor(static_cast<int64_t>(buffers.size())));
  for (size_t k = 0; k < buffers.size(); ++k)
    group.write("params/" + std::to_string(k), c10::IValue(name(k)));
  SGDOptions(0.1).momentum(0.9).serialize(options);
  group.write("options", options);
  groups.write("param_groups/0", group);
  ar.write("param_groups", groups);
  return reopened(ar);
}

std::string hex_name(size_t k) {  // as LibTorch 1.13 prints a TensorImpl*
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%zx", size_t{0x55d4c0a0b000} + 0x40 * k);
  return buf;
}

std::string decimal_name(size_t k) { return std::to_string(size_t{0x55d4c0a0b000} + 0x40 * k); }  // as 2.x

torch::Tensor momentum_of(torch::optim::Optimizer& opt, const torch::Tensor& p) {
  auto it = opt.state().find(optimizer_state_key(opt, p));
  if (it == opt.state().end()) return {};
  EXPECT_NE(it->second, nullptr);
  return static_cast<SGDParamState&>(*it->second).momentum_buffer();
}

TEST(OptimizerArchive, EitherLibTorchsParameterNamesGiveTheStateByPosition) {
  const std::vector<torch::Tensor> buffers = {torch::full({4, 3}, 1.5), torch::Tensor(),
                                              torch::full({2, 2, 2}, -2.0)};
  for (bool hex : {true, false}) {
    SCOPED_TRACE(hex ? "hex names (LibTorch 1.13)" : "decimal names (LibTorch 2.x)");
    auto ps = make_params(1);
    ForeachSgd opt(ps, SGDOptions(0.1).momentum(0.9));
    InputArchive ar = hex ? sgd_archive(buffers, hex_name) : sgd_archive(buffers, decimal_name);
    opt.load(ar);
    ASSERT_EQ(opt.state().size(), 2u);
    EXPECT_TRUE(torch::equal(momentum_of(opt, ps[0]), buffers[0]));
    EXPECT_FALSE(momentum_of(opt, ps[1]).defined());  // no state saved: none loaded
    EXPECT_TRUE(torch::equal(momentum_of(opt, ps[2]), buffers[2]));
  }
}

// Saved, loaded into a fresh optimizer on copies of the parameters, then stepped on: both go on
// bit for bit as one.
template <class Opt>
void expect_round_trip(Opt& a, Opt& b, std::vector<torch::Tensor>& pa, std::vector<torch::Tensor>& pb) {
  for (int k = 0; k < 3; ++k) step_with_grads(a, pa, k);
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < pa.size(); ++i) pb[i].copy_(pa[i]);
  }
  OutputArchive out;
  a.save(out);
  InputArchive in = reopened(out);
  b.load(in);
  ASSERT_EQ(b.state().size(), a.state().size());
  for (int k = 3; k < 5; ++k) {
    step_with_grads(a, pa, k);
    step_with_grads(b, pb, k);
  }
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << "parameter " << i;
}

TEST(OptimizerArchive, SgdStateRoundTripsThroughSaveAndLoad) {
  auto pa = make_params(2), pb = make_params(3);
  ForeachSgd a(pa, SGDOptions(0.05).momentum(0.9).weight_decay(1e-3));
  ForeachSgd b(pb, SGDOptions(0.05).momentum(0.9).weight_decay(1e-3));
  expect_round_trip(a, b, pa, pb);
}

TEST(OptimizerArchive, AdamWStateRoundTripsThroughSaveAndLoad) {
  auto pa = make_params(4), pb = make_params(5);
  PortableAdamW a(pa, torch::optim::AdamWOptions(1e-2).weight_decay(0.01));
  PortableAdamW b(pb, torch::optim::AdamWOptions(1e-2).weight_decay(0.01));
  expect_round_trip(a, b, pa, pb);
}

TEST(OptimizerArchive, ANameThatIsNoAddressOrAGroupOfAnotherSizeIsAnError) {
  auto ps = make_params(6);
  ForeachSgd opt(ps, SGDOptions(0.1).momentum(0.9));
  const std::vector<torch::Tensor> buffers = {torch::zeros({4, 3}), torch::zeros({3}),
                                              torch::zeros({2, 2, 2})};
  InputArchive bad_name = sgd_archive(buffers, [](size_t k) { return "0x1g" + std::to_string(k); });
  EXPECT_THROW(
      {
        try {
          opt.load(bad_name);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("is not an address"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  InputArchive too_few =
      sgd_archive(std::vector<torch::Tensor>(buffers.begin(), buffers.begin() + 2), hex_name);
  EXPECT_THROW(opt.load(too_few), Error);
}

// fuzz_checkpoint's find (corpus regress-sgd-reads-adamw-state): AdamW's state read by SGD gave
// states without momentum buffers, which the first step failed on.
TEST(OptimizerArchive, StateThatDoesNotFitItsParameterIsAnError) {
  auto pa = make_params(7), pb = make_params(7);
  PortableAdamW adamw(pa, torch::optim::AdamWOptions(1e-2));
  step_with_grads(adamw, pa, 0);
  OutputArchive out;
  adamw.save(out);
  InputArchive in = reopened(out);
  ForeachSgd sgd(pb, SGDOptions(0.1).momentum(0.9));
  try {
    sgd.load(in);
    FAIL() << "AdamW's state loaded into SGD";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'momentum_buffer' is missing"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(sgd.state().empty()) << "a refused archive left state behind";
  // Only the last buffer has the wrong shape: nothing is loaded, not even the first two.
  const std::vector<torch::Tensor> wrong_shape = {torch::zeros({4, 3}), torch::zeros({3}),
                                                  torch::zeros({2, 4})};
  InputArchive ar = sgd_archive(wrong_shape, hex_name);
  EXPECT_THROW(sgd.load(ar), Error);
  EXPECT_TRUE(sgd.state().empty()) << "a refused archive left state behind";
}

}  // namespace
}  // namespace dynamix
