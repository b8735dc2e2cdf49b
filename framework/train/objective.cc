// DYNAMIX — the training objective (train.loss) and what evaluation measures.
#include "framework/train/objective.h"

#include <sstream>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/train/precision.h"
#include "models/torchscript.h"

namespace dynamix {
namespace {

namespace F = torch::nn::functional;

constexpr int64_t kIgnored = -100;  // MLM positions that are not masked

std::string layout(const torch::Tensor& t) {
  std::ostringstream os;
  os << t.sizes() << " " << t.dtype();
  return os.str();
}

// Mean cross-entropy of logits [N, C] (or [N, L, V] for MLM) over the counted targets.
class CrossEntropy : public Objective {
 public:
  explicit CrossEntropy(const TrainConfig& train) : Objective(train) {}
  torch::Tensor loss(Model& model, const torch::Tensor& inputs, const torch::Tensor& targets) override {
    return of(forward_logits(model, inputs, train_), targets, torch::kMean);
  }

 protected:
  std::pair<torch::Tensor, torch::Tensor> eval_loss_sum(Model& model, const torch::Tensor& inputs,
                                                        const torch::Tensor& targets) override {
    auto logits = forward_logits(model, inputs, train_);
    return {of(logits, targets, torch::kSum), logits};
  }

 private:
  static torch::Tensor of(const torch::Tensor& logits, const torch::Tensor& targets,
                          F::CrossEntropyFuncOptions::reduction_t reduction) {
    return F::cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}),
                            F::CrossEntropyFuncOptions().ignore_index(kIgnored).reduction(reduction));
  }
};

// Mean squared error of outputs [N, C] against the one-hot targets, over N x C; evaluation sums it
// per sample (over C, divided by C), so its mean over the test set is the same quantity.
class MeanSquared : public Objective {
 public:
  explicit MeanSquared(const TrainConfig& train) : Objective(train) {}
  torch::Tensor loss(Model& model, const torch::Tensor& inputs, const torch::Tensor& targets) override {
    const auto out = forward_logits(model, inputs, train_);
    return F::mse_loss(out, one_hot(targets, out));
  }

 protected:
  std::pair<torch::Tensor, torch::Tensor> eval_loss_sum(Model& model, const torch::Tensor& inputs,
                                                        const torch::Tensor& targets) override {
    auto out = forward_logits(model, inputs, train_);
    auto sum = F::mse_loss(out, one_hot(targets, out), F::MSELossFuncOptions(torch::kSum)) / out.size(-1);
    return {sum, out};
  }

 private:
  static torch::Tensor one_hot(const torch::Tensor& targets, const torch::Tensor& out) {
    return F::one_hot(targets, out.size(-1)).to(out.dtype());
  }
};

// The model's own mean loss, forward(x, y); evaluation weighs it by the counted targets and takes
// the accuracy from forward(x).
class ModuleLoss : public Objective {
 public:
  explicit ModuleLoss(const TrainConfig& train) : Objective(train) {}
  torch::Tensor loss(Model& model, const torch::Tensor& inputs, const torch::Tensor& targets) override {
    return forward_own_loss(model, inputs, targets, train_);
  }

 protected:
  std::pair<torch::Tensor, torch::Tensor> eval_loss_sum(Model& model, const torch::Tensor& inputs,
                                                        const torch::Tensor& targets) override {
    const auto counted = targets.ne(kIgnored).sum();
    return {forward_own_loss(model, inputs, targets, train_) * counted,
            forward_logits(model, inputs, train_)};
  }
};

// Runs the sample through the model as training will (eval mode, no gradients) and checks what
// comes back; throws Error naming the model and the shapes.
void check_fit(const TrainConfig& train, const std::string& model_name, Model& model, const Batch& sample,
               int64_t num_classes) {
  const std::string what = "model '" + model_name + "'";
  const auto& x = sample.inputs;
  const auto& y = sample.targets;
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  torch::Tensor out, loss;
  try {
    out = forward_logits(model, x, train);
    if (train.loss == LossKind::kModule) loss = forward_own_loss(model, x, y, train);
    model.train(was_training);
  } catch (const std::exception& e) {
    model.train(was_training);
    if (dynamic_cast<const c10::OutOfMemoryError*>(&e)) throw;
    std::string why = torchscript_error_line(e);
    if (why.rfind(what + ": ", 0) == 0) why = why.substr(what.size() + 2);  // said once
    throw Error(what + " does not take the data set's inputs (a batch " + layout(x) + "): " + why);
  }
  const bool classify = y.dim() == 1;
  const std::string expected = classify ? "[N, classes]" : "[N, L, vocabulary]";
  DYNAMIX_CHECK(
      out.is_floating_point() && out.dim() == y.dim() + 1 && out.sizes().slice(0, y.dim()) == y.sizes(),
      what + " returned " + layout(out) + " for a batch " + layout(x) + "; expected floating-point " +
          expected + " outputs");
  const bool exact = train.loss == LossKind::kMse;
  DYNAMIX_CHECK(exact ? out.size(-1) == num_classes : out.size(-1) >= num_classes,
                what + " returned " + std::to_string(out.size(-1)) + " outputs per " +
                    (classify ? "sample" : "token") + "; the data set has " + std::to_string(num_classes) +
                    (classify ? " classes" : " vocabulary ids") +
                    (exact ? " (train.loss: mse needs as many)" : ""));
  DYNAMIX_CHECK(!exact || classify,
                "train.loss: mse needs one class label per sample; the data set's targets are " + layout(y) +
                    " (use cross_entropy)");
  DYNAMIX_CHECK(!loss.defined() || loss.numel() == 1, what + ": forward(x, y) returned " + layout(loss) +
                                                          "; train.loss: module needs the scalar loss");
}

}  // namespace

void Objective::evaluate(Model& model, const torch::Tensor& inputs, const torch::Tensor& targets,
                         double sums[3]) {
  const auto flat_targets = targets.reshape({-1});
  const auto mask = flat_targets.ne(kIgnored);
  const double counted = mask.sum().item<double>();
  if (counted == 0) return;
  const auto [loss_sum, outputs] = eval_loss_sum(model, inputs, targets);
  const auto predicted = outputs.reshape({-1, outputs.size(-1)}).argmax(1);
  const double loss = loss_sum.item<double>();
  const double correct = predicted.eq(flat_targets).logical_and(mask).sum().item<double>();
  sums[0] += loss;  // only once the whole batch is through: a retried chunk counts once
  sums[1] += correct;
  sums[2] += counted;
}

std::unique_ptr<Objective> make_objective(const TrainConfig& train, const std::string& model_name,
                                          Model& model, const Batch& sample, int64_t num_classes) {
  std::unique_ptr<Objective> objective;
  switch (train.loss) {
    case LossKind::kCrossEntropy:
      objective = std::make_unique<CrossEntropy>(train);
      break;
    case LossKind::kMse:
      objective = std::make_unique<MeanSquared>(train);
      break;
    case LossKind::kModule:
      DYNAMIX_CHECK(model.has_own_loss(),
                    "train.loss: module needs a model whose forward(x, y) returns its loss; "
                    "model '" +
                        model_name +
                        "' has none (a TorchScript module with forward(self, x, y: "
                        "Optional[Tensor] = None) has)");
      objective = std::make_unique<ModuleLoss>(train);
      break;
  }
  check_fit(train, model_name, model, sample, num_classes);
  return objective;
}

}  // namespace dynamix
