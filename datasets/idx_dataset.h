// DYNAMIX — MNIST / Fashion-MNIST from IDX files (raw or gzip), kept as uint8 in memory.
#pragma once

#include <string>

#include "datasets/dataset.h"

namespace dynamix {

class IdxDataset : public Dataset {
 public:
  // Reads an IDX image file (magic 0x00000803) and label file (0x00000801); validates both.
  IdxDataset(const std::string& images_path, const std::string& labels_path, float mean, float std,
             int64_t num_classes = 10);
  // The same from file contents already in memory (decompressed); the paths only label errors.
  IdxDataset(const std::vector<uint8_t>& image_bytes, const std::string& images_path,
             const std::vector<uint8_t>& label_bytes, const std::string& labels_path, float mean, float std,
             int64_t num_classes = 10);

  int64_t size() const override { return images_.size(0); }
  std::vector<int64_t> sample_shape() const override { return {1, images_.size(1), images_.size(2)}; }
  int64_t num_classes() const override { return num_classes_; }
  Batch get(const std::vector<int64_t>& indices, uint64_t seed) const override;

  const torch::Tensor& images() const { return images_; }  // uint8 [N,H,W]
  const torch::Tensor& labels() const { return labels_; }  // int64 [N]

 private:
  torch::Tensor images_, labels_;
  float mean_, std_;
  int64_t num_classes_;
};

// Both splits from a directory holding train-/t10k- images and labels (.gz optional).
DatasetSplits load_idx_dir(const std::string& dir, float mean, float std);

// Gathers `indices` (checked against n) into an int64 index tensor.
torch::Tensor index_tensor(const std::vector<int64_t>& indices, int64_t n);

}  // namespace dynamix
