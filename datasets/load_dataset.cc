// DYNAMIX — picks the dataset implementation by name and fills in default paths.
#include "datasets/cifar_dataset.h"
#include "datasets/dataset.h"
#include "datasets/idx_dataset.h"
#include "datasets/npy_dataset.h"
#include "datasets/synthetic.h"
#include "datasets/synthetic_interactions.h"
#include "datasets/text_dataset.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

constexpr uint64_t kTrainKey = 1, kTestKey = 2;  // synthetic splits draw different samples

}  // namespace

DatasetSplits load_dataset(const DatasetSpec& spec) {
  const std::string& name = spec.name;
  auto path_or = [&](const char* def) { return spec.path.empty() ? std::string(def) : spec.path; };
  const bool cifar = name == "cifar10" || name == "cifar100";
  if (spec.augment && !cifar) {
    throw Error("dataset.augment: random crop + flip is implemented for cifar10/cifar100, not " + name);
  }
  // Normalization constants: the training-set pixel mean/std of each dataset.
  if (name == "fashion_mnist")
    return load_idx_dir(path_or("/usr/share/datasets/fashion-mnist"), 0.2860f, 0.3530f);
  if (name == "mnist") return load_idx_dir(path_or("/usr/share/datasets/mnist"), 0.1307f, 0.3081f);
  if (name == "cifar10") return load_cifar_dir(path_or("/usr/share/datasets/cifar-10"), false, spec.augment);
  if (name == "cifar100") return load_cifar_dir(path_or("/usr/share/datasets/cifar-100"), true, spec.augment);
  if (name == "synthetic") {
    return {std::make_shared<SyntheticImages>(spec.train_size, spec.shape, spec.classes, kTrainKey),
            std::make_shared<SyntheticImages>(spec.test_size, spec.shape, spec.classes, kTestKey)};
  }
  if (name == "synthetic_tokens") {
    return {std::make_shared<SyntheticTokens>(spec.train_size, spec.seq_len, spec.classes, kTrainKey),
            std::make_shared<SyntheticTokens>(spec.test_size, spec.seq_len, spec.classes, kTestKey)};
  }
  if (name == "text") return load_text_mlm(spec.path, spec.vocab, spec.seq_len);
  if (name == "synthetic_interactions") {
    return {std::make_shared<SyntheticInteractions>(spec.train_size, spec.users, spec.items, kTrainKey),
            std::make_shared<SyntheticInteractions>(spec.test_size, spec.users, spec.items, kTestKey)};
  }
  if (name == "npy") {
    return load_npy_dataset(
        {spec.path, spec.train_inputs, spec.train_labels, spec.test_inputs, spec.test_labels});
  }
  throw Error(
      "dataset.name: unknown dataset '" + name +
      "' (expected fashion_mnist | mnist | cifar10 | cifar100 | synthetic | synthetic_tokens | text | "
      "synthetic_interactions | npy)");
}

}  // namespace dynamix
