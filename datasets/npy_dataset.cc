// DYNAMIX — .npy data sets: validation of the arrays against each other, batches by index_select.
#include "datasets/npy_dataset.h"

#include <algorithm>

#include "datasets/idx_dataset.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

constexpr int64_t kMaxClasses = int64_t{1} << 24;  // a larger id is a damaged file, not a class

bool is_signed_integer(torch::ScalarType t) {
  return t == torch::kInt8 || t == torch::kInt16 || t == torch::kInt32 || t == torch::kInt64;
}

// The type a model takes for inputs stored as `t`.
torch::ScalarType batch_type(torch::ScalarType t) {
  return is_signed_integer(t) ? torch::kInt64 : torch::kFloat32;
}

// Checks that `labels` holds non-negative integer class ids, one per sample; returns the largest plus one.
int64_t label_classes(const NpyArray& labels) {
  const torch::Tensor& l = labels.data;
  if (!is_signed_integer(l.scalar_type()) && l.scalar_type() != torch::kUInt8) {
    throw Error(labels.path + ": labels must be integer class ids (uint8, int8/16/32/64), not '" +
                labels.descr + "'");
  }
  if (l.dim() != 1) {
    throw Error(labels.path + ": labels must have shape (N,), one class id per sample; got " +
                npy_shape_text(l.sizes()));
  }
  if (l.numel() == 0) return 0;
  const int64_t min = l.min().item<int64_t>();
  if (min < 0) {
    const int64_t at = l.argmin().item<int64_t>();
    throw Error(labels.path + ": label " + std::to_string(min) + " at item " + std::to_string(at) +
                " is negative");
  }
  const int64_t max = l.max().item<int64_t>();
  if (max >= kMaxClasses) {
    throw Error(labels.path + ": label " + std::to_string(max) + " at item " +
                std::to_string(l.argmax().item<int64_t>()) + " is not below " + std::to_string(kMaxClasses) +
                " (labels are class ids 0, 1, ...)");
  }
  return max + 1;
}

// Each sample's shape: the sizes after the first axis (none for a 0-d array).
std::vector<int64_t> per_sample_shape(const torch::Tensor& t) {
  const auto sizes = t.sizes();
  return {sizes.begin() + std::min<int64_t>(1, t.dim()), sizes.end()};
}

std::string file_in(const std::string& explicit_path, const std::string& dir, const std::string& key) {
  if (!explicit_path.empty()) return explicit_path;
  if (dir.empty()) {
    throw Error("dataset." + key + ": not set (name the .npy file, or set dataset.path to a folder holding " +
                key + ".npy)");
  }
  return dir + "/" + key + ".npy";
}

}  // namespace

NpyDataset::NpyDataset(NpyArray inputs, NpyArray labels, int64_t num_classes)
    : inputs_(std::move(inputs)), labels_(std::move(labels)), num_classes_(num_classes) {
  const torch::Tensor& x = inputs_.data;
  if (x.dim() < 2) {
    throw Error(inputs_.path + ": inputs need a sample axis and a per-sample shape, got shape " +
                npy_shape_text(x.sizes()) + " (one feature per sample: save a.reshape(-1, 1))");
  }
  if (x.size(0) == 0) throw Error(inputs_.path + ": holds no samples");
  const int64_t needed = label_classes(labels_);
  if (labels_.data.size(0) != x.size(0)) {
    throw Error(inputs_.path + " holds " + std::to_string(x.size(0)) + " samples but " + labels_.path +
                " holds " + std::to_string(labels_.data.size(0)) + " labels");
  }
  if (needed > num_classes_) {
    throw Error(labels_.path + ": label " + std::to_string(needed - 1) + " is not below " +
                std::to_string(num_classes_) + " classes");
  }
}

std::vector<int64_t> NpyDataset::sample_shape() const { return per_sample_shape(inputs_.data); }

Batch NpyDataset::get(const std::vector<int64_t>& indices, uint64_t /*seed*/) const {
  const torch::Tensor idx = index_tensor(indices, size());
  torch::Tensor x = inputs_.data.index_select(0, idx).to(batch_type(inputs_.data.scalar_type()));
  return {x, labels_.data.index_select(0, idx).to(torch::kInt64)};
}

DatasetSplits load_npy_dataset(const NpyFiles& f) {
  NpyArray train_x = load_npy(file_in(f.train_inputs, f.dir, "train_inputs"));
  NpyArray train_y = load_npy(file_in(f.train_labels, f.dir, "train_labels"));
  NpyArray test_x = load_npy(file_in(f.test_inputs, f.dir, "test_inputs"));
  NpyArray test_y = load_npy(file_in(f.test_labels, f.dir, "test_labels"));
  if (train_x.data.scalar_type() != test_x.data.scalar_type()) {
    throw Error(train_x.path + " holds '" + train_x.descr + "' but " + test_x.path + " holds '" +
                test_x.descr + "': both splits need the same input dtype");
  }
  if (train_x.data.dim() != test_x.data.dim() ||
      per_sample_shape(train_x.data) != per_sample_shape(test_x.data)) {
    throw Error(train_x.path + " has shape " + npy_shape_text(train_x.data.sizes()) + " but " + test_x.path +
                " has " + npy_shape_text(test_x.data.sizes()) +
                ": samples of both splits need the same shape");
  }
  const int64_t classes = std::max(label_classes(train_y), label_classes(test_y));
  return {std::make_shared<NpyDataset>(std::move(train_x), std::move(train_y), classes),
          std::make_shared<NpyDataset>(std::move(test_x), std::move(test_y), classes)};
}

}  // namespace dynamix
