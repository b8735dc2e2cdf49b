// DYNAMIX — a data set from NumPy .npy arrays (inputs and labels per split), memory-mapped.
#pragma once

#include <string>

#include "datasets/dataset.h"
#include "datasets/npy_array.h"

namespace dynamix {

class NpyDataset : public Dataset {
 public:
  // inputs: [N, ...] of any supported dtype (each sample's shape after the first axis);
  // labels: [N] integer class ids in [0, num_classes). Throws dynamix::Error naming the file.
  NpyDataset(NpyArray inputs, NpyArray labels, int64_t num_classes);

  int64_t size() const override { return inputs_.data.size(0); }
  std::vector<int64_t> sample_shape() const override;
  int64_t num_classes() const override { return num_classes_; }
  // Floating-point, uint8 and bool inputs come out as float32 (values unchanged: normalize before
  // saving), signed integer inputs as int64 (ids for embedding and token models); labels as int64.
  Batch get(const std::vector<int64_t>& indices, uint64_t seed) const override;

 private:
  NpyArray inputs_, labels_;
  int64_t num_classes_;
};

// The .npy files of both splits. An empty name means `<dir>/<key>.npy`, e.g. dir/train_inputs.npy.
struct NpyFiles {
  std::string dir, train_inputs, train_labels, test_inputs, test_labels;
};

// Maps the four files and checks that the splits agree (per-sample shape and input dtype);
// num_classes is the largest label of either split plus one.
DatasetSplits load_npy_dataset(const NpyFiles& files);

}  // namespace dynamix
