// DYNAMIX — checkpoint payloads: round trip, and the bad records found by fuzzing
// (tests/fuzz/fuzz_checkpoint.cc) rejected with a message instead of loading or misbehaving.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>

#include "framework/core/error.h"
#include "framework/train/checkpoint.h"
#include "tests/test_util.h"

namespace dynamix {
namespace {

TrainProgress two_rank_progress() {
  TrainProgress p;
  p.step = 12;
  p.epoch = 1;
  p.cursor = 40;
  p.world_size = 2;
  p.plan = {8, 16};
  p.batch_max = {64, 32};
  p.elapsed_s = 3.5;
  p.model = "linear";
  p.optimizer = "sgd";
  p.policy = "static";
  p.policy_state = std::string("\0state", 6);
  p.rng_states = {generator_state(), generator_state()};
  return p;
}

std::string payload_of(torch::nn::Linear& model, const TrainProgress& p) {
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  return encode_checkpoint(*model, opt, p);
}

// The archive encode_checkpoint writes, with `meta` as the progress record and `policy_state`
// as that tensor.
std::string payload_with_meta(const std::string& meta,
                              const torch::Tensor& policy_state = torch::zeros({1}, torch::kUInt8)) {
  torch::nn::Linear model(3, 2);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  torch::serialize::OutputArchive ar, model_ar, opt_ar;
  ar.write("meta", c10::IValue(meta));
  ar.write("policy_state", policy_state);
  std::string rng = generator_state();
  ar.write("rng/0", torch::from_blob(rng.data(), {static_cast<int64_t>(rng.size())}, torch::kUInt8).clone());
  model->save(model_ar);
  opt.save(opt_ar);
  ar.write("model", model_ar);
  ar.write("optimizer", opt_ar);
  std::ostringstream out;
  ar.save_to(out);
  return out.str();
}

std::string decode_error(const std::string& payload, torch::nn::Linear& model) {
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  return testing::error_of([&] { decode_checkpoint(payload, *model, opt, "ckpt.pt"); });
}

// The decode error (or "<no error>") of a minimal step-5 progress record plus `field` (",
// \"key\": value" or empty).
std::string minimal_meta(const std::string& field = "") {
  return R"({"step": 5, "epoch": 0, "cursor": 0, "plan": [4], "world_size": 1, "elapsed_s": 0,
         "samples_seen": 0, "wait_fraction_sum": 0, "last_test_accuracy": -1, "best_test_accuracy": -1,
         "time_to_target_s": -1, "windows": 0, "last_window_loss": 0, "oom_events": 0, "batch_max": [],
         "model": "linear", "optimizer": "sgd", "policy": "static")" +
         field + "}";
}

std::string minimal_meta_error(torch::nn::Linear& model, const std::string& field) {
  return decode_error(payload_with_meta(minimal_meta(field)), model);
}

TEST(CheckpointDecode, RoundTrip) {
  torch::nn::Linear saved(3, 2), loaded(3, 2);
  const TrainProgress p = two_rank_progress();
  const std::string payload = payload_of(saved, p);
  torch::optim::SGD opt(loaded->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  const TrainProgress q = decode_checkpoint(payload, *loaded, opt, "ckpt.pt");
  EXPECT_TRUE(torch::equal(saved->weight, loaded->weight));
  EXPECT_EQ(q.step, 12);
  EXPECT_EQ(q.plan, p.plan);
  EXPECT_EQ(q.batch_max, p.batch_max);
  EXPECT_EQ(q.policy_state, p.policy_state);
  EXPECT_EQ(q.rng_states, p.rng_states);
  EXPECT_EQ(peek_checkpoint(payload, "ckpt.pt").cursor, 40);
}

TEST(CheckpointDecode, LossScaleStateRoundTripsAndIsChecked) {
  torch::nn::Linear saved(3, 2), loaded(3, 2);
  TrainProgress p = two_rank_progress();
  p.loss_scale = 4096;
  p.loss_scale_good_steps = 17;
  p.skipped_steps = 3;
  torch::optim::SGD opt(loaded->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  const TrainProgress q = decode_checkpoint(payload_of(saved, p), *loaded, opt, "ckpt.pt");
  EXPECT_EQ(q.loss_scale, 4096);
  EXPECT_EQ(q.loss_scale_good_steps, 17);
  EXPECT_EQ(q.skipped_steps, 3);

  // Checkpoints written before loss scaling existed have none of the three fields (see
  // IntegerFieldsMustBeIntegers); present, they must make sense.
  torch::nn::Linear model(3, 2);
  auto error_for = [&](const std::string& scale, const std::string& good) {
    return minimal_meta_error(model, R"(, "loss_scale": )" + scale + R"(, "loss_scale_good_steps": )" + good +
                                         R"(, "skipped_steps": 0)");
  };
  EXPECT_EQ(error_for("65536", "2"), "<no error>");
  EXPECT_EQ(error_for("0", "0"), "<no error>");
  EXPECT_NE(error_for("0.5", "0").find("'loss_scale' must be 0 (not in use) or a finite number >= 1"),
            std::string::npos);
  EXPECT_NE(error_for("65536", "-2").find("loss-scale counters"), std::string::npos);
  EXPECT_NE(error_for("\"big\"", "0").find("progress record unreadable"), std::string::npos);
}

TEST(CheckpointDecode, WindowInProgressRoundTripsAndIsOptional) {
  // The losses and gradient norms of the decision window in progress: a resumed run must hand
  // the policy what the uninterrupted one would (found by the chaos test, e2e_chaos).
  torch::nn::Linear saved(3, 2), loaded(3, 2);
  TrainProgress p = two_rank_progress();
  p.window_losses = {1.25, 0.1 + 0.2, std::nan("")};
  p.window_grad_norms = {3.0, 1e-300};
  torch::optim::SGD opt(loaded->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  const TrainProgress q = decode_checkpoint(payload_of(saved, p), *loaded, opt, "ckpt.pt");
  ASSERT_EQ(q.window_losses.size(), 3u);
  EXPECT_EQ(q.window_losses[0], 1.25);
  EXPECT_EQ(q.window_losses[1], 0.1 + 0.2);  // bit for bit
  EXPECT_TRUE(std::isnan(q.window_losses[2]));
  EXPECT_EQ(q.window_grad_norms, p.window_grad_norms);

  torch::nn::Linear model(3, 2);
  auto error_for = [&](const std::string& field) { return minimal_meta_error(model, field); };
  EXPECT_EQ(error_for(""), "<no error>");  // older checkpoints: an empty window
  EXPECT_EQ(error_for(R"(, "window_losses": [0.5, null], "window_grad_norms": [])"), "<no error>");
  EXPECT_NE(error_for(R"(, "window_losses": ["x"])").find("'window_losses[0]' is not a number"),
            std::string::npos);
  EXPECT_NE(error_for(R"(, "window_grad_norms": 2)").find("'window_grad_norms' is not a list"),
            std::string::npos);
}

TEST(CheckpointDecode, LastEvalStepRoundTripsAndIsOptional) {
  torch::nn::Linear saved(3, 2), loaded(3, 2);
  TrainProgress p = two_rank_progress();
  EXPECT_EQ(p.last_eval_step, -1);
  p.last_eval_step = 10;
  torch::optim::SGD opt(loaded->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  EXPECT_EQ(decode_checkpoint(payload_of(saved, p), *loaded, opt, "ckpt.pt").last_eval_step, 10);
  EXPECT_EQ(peek_checkpoint(payload_of(saved, p), "ckpt.pt").last_eval_step, 10);

  // Older checkpoints have no last_eval_step (unknown: -1); present, it must be -1..step.
  torch::nn::Linear model(3, 2);
  auto error_for = [&](const std::string& field) { return minimal_meta_error(model, field); };
  EXPECT_EQ(error_for(""), "<no error>");
  EXPECT_EQ(error_for(R"(, "last_eval_step": 5)"), "<no error>");
  EXPECT_EQ(error_for(R"(, "last_eval_step": -1)"), "<no error>");
  EXPECT_NE(error_for(R"(, "last_eval_step": 6)").find("'last_eval_step' must be -1 or a step"),
            std::string::npos);
  EXPECT_NE(error_for(R"(, "last_eval_step": 2.5)").find("'last_eval_step' is not an integer"),
            std::string::npos);
}

TEST(CheckpointDecode, OtherOptimizerIsRejectedByName) {
  // LibTorch's own check of another optimizer's state is an INTERNAL ASSERT with a backtrace.
  torch::nn::Linear saved(3, 2), loaded(3, 2);
  const std::string payload = payload_of(saved, two_rank_progress());  // optimizer "sgd"
  torch::optim::AdamW opt(loaded->parameters(), torch::optim::AdamWOptions(0.1));
  try {
    decode_checkpoint(payload, *loaded, opt, "ckpt.pt", "adamw");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("ckpt.pt was written with optimizer 'sgd', the configuration asks for 'adamw'"),
              std::string::npos)
        << msg;
    EXPECT_EQ(msg.find("INTERNAL ASSERT"), std::string::npos) << msg;
  }
  // Without the name, LibTorch's check is reported without its backtrace.
  try {
    decode_checkpoint(payload, *loaded, opt, "ckpt.pt");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("does not match the configured optimizer"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("Exception raised from"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("frame #"), std::string::npos) << msg;
  }
}

TEST(CheckpointDecode, OtherModelShapeIsRejected) {
  // LibTorch's reader replaced the parameter with the stored 3x3 tensor and reported nothing.
  torch::nn::Linear other(3, 3), model(3, 2);
  const std::string msg = decode_error(payload_of(other, two_rank_progress()), model);
  EXPECT_NE(msg.find("ckpt.pt: model 'linear' does not match the configured model"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("('weight' is [3, 3] float in the checkpoint, [2, 3] float in the model)"),
            std::string::npos)
      << msg;
  EXPECT_EQ(model->weight.sizes(), (std::vector<int64_t>{2, 3}));  // checked before anything is loaded
}

TEST(CheckpointDecode, OtherModelTypeIsRejected) {
  // float64 weights loaded into a float32 model kept dtype float with the double's bytes read as floats.
  torch::nn::Linear other(3, 2), model(3, 2);
  other->to(torch::kFloat64);
  const std::string msg = decode_error(payload_of(other, two_rank_progress()), model);
  EXPECT_NE(msg.find("'weight' is [2, 3] double in the checkpoint, [2, 3] float in the model"),
            std::string::npos)
      << msg;
}

TEST(CheckpointDecode, NestedModulesAreCheckedByPath) {
  torch::nn::Sequential other(torch::nn::Linear(3, 2), torch::nn::BatchNorm1d(3));
  torch::nn::Sequential model(torch::nn::Linear(3, 2), torch::nn::BatchNorm1d(2));
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  torch::optim::SGD other_opt(other->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  try {
    decode_checkpoint(encode_checkpoint(*other, other_opt, two_rank_progress()), *model, opt, "ckpt.pt");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'1.weight' is [3] float in the checkpoint, [2] float in the model"),
              std::string::npos)
        << e.what();
  }
}

TEST(CheckpointDecode, BroadcastParametersAreRejected) {
  // Right shape and dtype, but every element is one stored value: the optimizer's in-place
  // update of such a parameter fails at the first step of the resumed run.
  torch::nn::Linear saved(3, 2), model(3, 2);
  {
    torch::NoGradGuard no_grad;
    saved->weight.set_(torch::zeros({1}).expand({2, 3}));
  }
  EXPECT_NE(decode_error(payload_of(saved, two_rank_progress()), model)
                .find("'weight' is a broadcast view in the checkpoint"),
            std::string::npos);
}

TEST(CheckpointDecode, IntegerFieldsMustBeIntegers) {
  // A float where an integer belongs was cast without a range check (undefined for 1e300).
  const std::string base =
      R"("epoch": 0, "cursor": 0, "world_size": 1, "elapsed_s": 0, "samples_seen": 0,
         "wait_fraction_sum": 0, "last_test_accuracy": -1, "best_test_accuracy": -1,
         "time_to_target_s": -1, "windows": 0, "last_window_loss": 0, "oom_events": 0,
         "model": "linear", "optimizer": "sgd", "policy": "static")";
  torch::nn::Linear model(3, 2);
  auto error_for = [&](const std::string& step, const std::string& batch_max,
                       const std::string& plan = "[4]") {
    return decode_error(payload_with_meta("{\"step\": " + step + ", \"batch_max\": " + batch_max +
                                          ", \"plan\": " + plan + ", " + base + "}"),
                        model);
  };
  EXPECT_EQ(error_for("5", "[]"), "<no error>");
  EXPECT_NE(
      error_for("1e300", "[]").find("ckpt.pt: progress record unreadable: 'step' is not an integer: 1e+300"),
      std::string::npos);
  EXPECT_NE(error_for("5", "[1.5]").find("'batch_max[0]' is not an integer"), std::string::npos);
  EXPECT_NE(error_for("5", "[4294967296]").find("'batch_max[0]' is out of range: 4294967296"),
            std::string::npos);
  EXPECT_NE(error_for("18446744073709551615", "[]").find("'step' is out of range"), std::string::npos);
}

TEST(CheckpointDecode, ProgressMustFitTheWorld) {
  // The trainer takes plan[rank] and rng_states[rank] for every rank of world_size.
  torch::nn::Linear model(3, 2);
  auto error_for = [&](const std::string& world, const std::string& plan, const std::string& cursor) {
    return decode_error(
        payload_with_meta(R"({"step": 5, "epoch": 0, "cursor": )" + cursor + R"(, "plan": )" + plan +
                          R"(, "world_size": )" + world + R"(, "elapsed_s": 0, "samples_seen": 0,
         "wait_fraction_sum": 0, "last_test_accuracy": -1, "best_test_accuracy": -1, "time_to_target_s": -1,
         "windows": 0, "last_window_loss": 0, "oom_events": 0, "batch_max": [], "model": "linear",
         "optimizer": "sgd", "policy": "static"})"),
        model);
  };
  EXPECT_EQ(error_for("1", "[4]", "0"), "<no error>");
  EXPECT_NE(error_for("0", "[4]", "0").find("'plan' has 1 entries for world_size 0"), std::string::npos);
  EXPECT_NE(error_for("1", "[4, 4]", "0").find("'plan' has 2 entries for world_size 1"), std::string::npos);
  EXPECT_NE(error_for("1", "[0]", "0").find("'plan' holds batch size 0"), std::string::npos);
  EXPECT_NE(error_for("1", "[4]", "-81").find("negative step, epoch, cursor"), std::string::npos);
}

TEST(CheckpointDecode, ByteStringsMustBeStoredBytes) {
  // The CI fuzzer ran out of memory: a byte tensor stored as a broadcast view of one byte claims
  // any length, and copying it out (contiguous) would allocate all of it. Refused before that,
  // as are other dtypes and shapes; the byte string our writer stores still loads.
  torch::nn::Linear model(3, 2);
  auto error_for = [&](const torch::Tensor& state) {
    return decode_error(payload_with_meta(minimal_meta(), state), model);
  };
  EXPECT_EQ(error_for(torch::arange(5, torch::kUInt8)), "<no error>");
  EXPECT_NE(error_for(torch::zeros({1}, torch::kUInt8).expand({int64_t{1} << 40}))
                .find("'policy_state' is not a byte string ([1099511627776] unsigned char, a strided view)"),
            std::string::npos);
  EXPECT_NE(
      error_for(torch::zeros({2}, torch::kFloat)).find("'policy_state' is not a byte string ([2] float)"),
      std::string::npos);
  EXPECT_NE(error_for(torch::zeros({2, 2}, torch::kUInt8)).find("'policy_state' is not a byte string"),
            std::string::npos);
}

// LibTorch's reader crashed (SEGV in its TorchScript parser) on a payload with damaged module
// source, found by fuzz_checkpoint's payload mode; the payload's entries are checked first.
TEST(CheckpointDecode, DamagedPayloadIsRefusedBeforeLibTorchReadsIt) {
  torch::nn::Linear model(3, 2);
  std::string payload = payload_of(model, two_rank_progress());
  const size_t at = payload.find("__parameters__");
  ASSERT_NE(at, std::string::npos);
  payload[at + 2] = 'X';
  const std::string msg = decode_error(payload, model);
  EXPECT_NE(msg.find("checkpoint ckpt.pt: not an intact archive: 'archive/code/"), std::string::npos) << msg;
  EXPECT_NE(msg.find("': checksum mismatch"), std::string::npos) << msg;
  EXPECT_EQ(decode_error(payload_of(model, two_rank_progress()), model), "<no error>");
}

}  // namespace
}  // namespace dynamix
