// DYNAMIX — a model scripted or traced in Python, trained like a built-in one.
#include "models/torchscript.h"

#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <unordered_set>
#include <utility>
#include <vector>

#include "framework/core/error.h"

namespace dynamix {
namespace {

// Registers the TorchScript module's own parameters and buffers in `mirror`, the same tensors
// under the same names, and a plain nn::Module per submodule, so that names, order and nesting
// are those of the Python module's state_dict (and of a built-in model written the same way). A
// tensor met again (tied weights) is registered once, under its first name, as state_dict would:
// the optimizer and the gradient buckets must see it once.
void mirror_state(const torch::jit::Module& source, torch::nn::Module& mirror,
                  std::unordered_set<const void*>& seen) {
  for (const auto& p : source.named_parameters(/*recurse=*/false)) {
    if (seen.insert(p.value.unsafeGetTensorImpl()).second) {
      mirror.register_parameter(p.name, p.value, p.value.requires_grad());
    }
  }
  for (const auto& b : source.named_buffers(/*recurse=*/false)) {
    if (seen.insert(b.value.unsafeGetTensorImpl()).second) mirror.register_buffer(b.name, b.value);
  }
  for (const auto& child : source.named_children()) {
    auto sub = std::make_shared<torch::nn::Module>();
    mirror_state(child.value, *sub, seen);
    mirror.register_module(child.name, sub);
  }
}

class TorchScriptModel : public Model {
 public:
  TorchScriptModel(torch::jit::Module module, std::string path)
      : module_(std::move(module)), path_(std::move(path)) {
    const auto forward = module_.find_method("forward");
    DYNAMIX_CHECK(forward, what() + " has no forward method");
    // (self, x) or (self, x, y): the loss of targets y when given, logits when y is None.
    const auto& args = forward->function().getSchema().arguments();
    own_loss_ = args.size() == 3 && args[2].default_value().has_value();
    std::unordered_set<const void*> seen;
    mirror_state(module_, *this, seen);
    train(true);
  }

  torch::Tensor forward(torch::Tensor x) override { return call({std::move(x)}); }
  bool has_own_loss() const override { return own_loss_; }
  torch::Tensor forward_loss(torch::Tensor x, torch::Tensor y) override {
    DYNAMIX_CHECK(own_loss_, what() +
                                 ": forward takes no targets; train.loss: module needs "
                                 "forward(self, x, y: Optional[Tensor] = None) returning the loss");
    return call({std::move(x), std::move(y)});
  }

  // BatchNorm and dropout in the TorchScript code read its modules' `training` attributes.
  void train(bool on = true) override {
    torch::nn::Module::train(on);
    module_.train(on);
  }

 private:
  std::string what() const { return "model 'torchscript:" + path_ + "'"; }

  torch::Tensor call(std::vector<c10::IValue> args) {
    // Without graph optimization every op runs as LibTorch's eager op with ordinary autograd: the
    // numerics of a built-in model, from the first step on (the profiling executor would rewrite
    // the graph after its first calls, with symbolic gradients and fusions).
    torch::jit::GraphOptimizerEnabledGuard plain(false);
    c10::IValue out;
    try {
      out = module_.forward(std::move(args));
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      const std::string line = torchscript_error_line(e);
      // The interpreter rethrows LibTorch's out-of-memory as a plain error: keep it one, so that
      // the trainer recovers as it does for built-in models.
      if (line.find("out of memory") != std::string::npos) {
        throw c10::OutOfMemoryError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, line);
      }
      throw Error(what() + ": forward failed: " + line);
    }
    DYNAMIX_CHECK(out.isTensor(), what() + ": forward returned " + out.tagKind() + ", expected a Tensor");
    return out.toTensor();
  }

  torch::jit::Module module_;
  std::string path_;
  bool own_loss_ = false;
};

}  // namespace

std::string torchscript_error_line(const std::exception& e) {
  const auto* ce = dynamic_cast<const c10::Error*>(&e);
  std::istringstream in(ce ? ce->what_without_backtrace() : e.what());
  // The interpreter's message: a header, the traceback (source lines), then "SomeError: message".
  static const std::regex error_line(R"(^[A-Za-z_][\w.]*(Error|Exception): .*)");
  std::string line, first;
  bool traceback = false;
  while (std::getline(in, line)) {
    if (first.empty()) first = line;
    if (line.rfind("Traceback of TorchScript", 0) == 0) {
      traceback = true;
    } else if (traceback && std::regex_match(line, error_line)) {
      return line;
    }
  }
  return first;
}

ModelPtr load_torchscript_model(const std::string& path) {
  const std::string what = "model 'torchscript:" + path + "'";
  std::error_code ec;
  DYNAMIX_CHECK(!path.empty(),
                "model 'torchscript:': give the path of a TorchScript file (torchscript:PATH)");
  DYNAMIX_CHECK(std::filesystem::is_regular_file(path, ec), what + ": no such file");
  torch::jit::Module module;
  try {
    module = torch::jit::load(path, torch::Device(torch::kCPU));
  } catch (const std::exception& e) {
    throw Error(what +
                ": not a TorchScript file (write it with torch.jit.save): " + torchscript_error_line(e));
  }
  return std::make_shared<TorchScriptModel>(std::move(module), path);
}

}  // namespace dynamix
