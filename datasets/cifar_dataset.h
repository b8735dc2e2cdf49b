// DYNAMIX — CIFAR-10 / CIFAR-100 binary batches, uint8 in memory, optional crop+flip augmentation.
#pragma once

#include <array>
#include <string>

#include "datasets/dataset.h"

namespace dynamix {

struct CifarFormat {
  int64_t label_bytes;  // 1 (CIFAR-10) or 2 (CIFAR-100: coarse then fine; we use fine)
  int64_t num_classes;
  std::array<float, 3> mean, std;  // per channel, of the training set
};
CifarFormat cifar10_format();
CifarFormat cifar100_format();

class CifarDataset : public Dataset {
 public:
  // Concatenates the records of `files` (raw or .gz); validates record size and labels.
  CifarDataset(const std::vector<std::string>& files, const CifarFormat& format, bool augment);
  // The same from file contents already in memory (decompressed); `files[i]` names `contents[i]` in errors.
  CifarDataset(const std::vector<std::string>& files, const std::vector<std::vector<uint8_t>>& contents,
               const CifarFormat& format, bool augment);

  int64_t size() const override { return images_.size(0); }
  std::vector<int64_t> sample_shape() const override { return {3, 32, 32}; }
  int64_t num_classes() const override { return format_.num_classes; }
  // With augment: random 32x32 crop of the 4-pixel zero-padded image and a horizontal flip with
  // probability 1/2, both drawn from (seed, index).
  Batch get(const std::vector<int64_t>& indices, uint64_t seed) const override;

  const torch::Tensor& labels() const { return labels_; }

 private:
  torch::Tensor images_, labels_;  // uint8 [N,3,32,32], int64 [N]
  torch::Tensor scale_, bias_;     // float [1,3,1,1]: x_norm = x_uint8 * scale + bias
  CifarFormat format_;
  bool augment_;
};

// cifar10: data_batch_{1..5}.bin + test_batch.bin; cifar100: train.bin + test.bin. `dir` may be the
// folder holding them or its parent (cifar-10-batches-bin/, cifar-100-binary/).
DatasetSplits load_cifar_dir(const std::string& dir, bool cifar100, bool augment);

}  // namespace dynamix
