// DYNAMIX — the dataset interface the trainer codes against, and the loader that picks one by name.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dynamix {

// One batch on CPU. targets are int64; -100 marks a position the loss ignores (MLM).
struct Batch {
  torch::Tensor inputs;
  torch::Tensor targets;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual std::vector<int64_t> sample_shape() const = 0;   // per sample, e.g. {1,28,28} or {seq_len}
  virtual int64_t num_classes() const = 0;                 // classes; vocab size for MLM
  virtual std::string task() const { return "classify"; }  // "classify" | "mlm"
  // Ids per input column for embedding models (users, items); empty for images and text.
  virtual std::vector<int64_t> input_cardinality() const { return {}; }
  // Samples at `indices`, in order: float32 normalized inputs (int64 token ids for text) on CPU.
  // Random augmentation / masking is a pure function of (seed, index), so a sample gets the same
  // augmentation whichever rank loads it. Throws dynamix::Error for an index out of range.
  virtual Batch get(const std::vector<int64_t>& indices, uint64_t seed) const = 0;
};

// Mirror of DatasetConfig (framework/config/config.h); datasets/ does not depend on the config.
struct DatasetSpec {
  std::string name;  // fashion_mnist | mnist | cifar10 | cifar100 | synthetic | synthetic_tokens | text |
                     // synthetic_interactions | npy
  std::string path;  // directory (IDX, CIFAR, npy) or text file; empty = the dataset's default
  bool augment = false;
  int64_t train_size = 4096;
  int64_t test_size = 1024;
  std::vector<int64_t> shape{3, 32, 32};
  int64_t classes = 10;
  int64_t seq_len = 128;
  std::string vocab;
  int64_t users = 10000;
  int64_t items = 5000;
  // npy: the four arrays; an empty one is path/<key>.npy
  std::string train_inputs, train_labels, test_inputs, test_labels;
};

struct DatasetSplits {
  std::shared_ptr<Dataset> train, test;
};

// Loads both splits; throws dynamix::Error naming the file and the problem.
DatasetSplits load_dataset(const DatasetSpec& spec);

}  // namespace dynamix
