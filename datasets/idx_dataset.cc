// DYNAMIX — IDX parsing and validation; batches are one index_select plus one normalization.
#include "datasets/idx_dataset.h"

#include <cstdio>
#include <cstring>

#include "datasets/file_reader.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

constexpr uint32_t kImageMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr uint32_t kLabelMagic = 0x00000801;  // unsigned byte, 1 dimension

uint32_t read_be32(const std::vector<uint8_t>& b, size_t off) {
  return (uint32_t{b[off]} << 24) | (uint32_t{b[off + 1]} << 16) | (uint32_t{b[off + 2]} << 8) |
         uint32_t{b[off + 3]};
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

// Checks magic and size, returns the dimensions declared by the header.
std::vector<uint32_t> parse_header(const std::vector<uint8_t>& bytes, const std::string& path, uint32_t magic,
                                   size_t ndim, const char* what) {
  const size_t header = 4 + 4 * ndim;
  if (bytes.size() < header) {
    throw Error(path + ": truncated IDX header: expected at least " + std::to_string(header) +
                " bytes, file has " + std::to_string(bytes.size()));
  }
  uint32_t got = read_be32(bytes, 0);
  if (got != magic) {
    throw Error(path + ": bad IDX magic " + hex(got) + ", expected " + hex(magic) + " (" + what + ")");
  }
  std::vector<uint32_t> dims(ndim);
  uint64_t payload = 1, expected = 0;
  bool overflow = false;
  std::string shape;
  for (size_t d = 0; d < ndim; ++d) {
    dims[d] = read_be32(bytes, 4 + 4 * d);
    if (dims[d] == 0 && d > 0) throw Error(path + ": IDX dimension " + std::to_string(d) + " is 0");
    // Three 32-bit sizes can overflow 64 bits (4 x 2^31 x 2^31 wrapped to 0 and matched a bare header).
    overflow = overflow || __builtin_mul_overflow(payload, uint64_t{dims[d]}, &payload);
    shape += (d ? " x " : "") + std::to_string(dims[d]);
  }
  overflow = overflow || __builtin_add_overflow(payload, uint64_t{header}, &expected);
  if (overflow) {
    throw Error(path + ": truncated file: header declares " + shape + " items, more than the " +
                std::to_string(bytes.size()) + " bytes the file has");
  }
  if (bytes.size() != expected) {
    throw Error(path + (bytes.size() < expected ? ": truncated file" : ": trailing bytes") +
                ": header declares " + std::to_string(expected) + " bytes, file has " +
                std::to_string(bytes.size()));
  }
  return dims;
}

}  // namespace

torch::Tensor index_tensor(const std::vector<int64_t>& indices, int64_t n) {
  for (int64_t i : indices) {
    if (i < 0 || i >= n) {
      throw Error("dataset index " + std::to_string(i) + " out of range [0, " + std::to_string(n) + ")");
    }
  }
  return torch::tensor(indices, torch::kInt64);
}

IdxDataset::IdxDataset(const std::string& images_path, const std::string& labels_path, float mean, float std,
                       int64_t num_classes)
    : IdxDataset(read_maybe_gz(images_path), images_path, read_maybe_gz(labels_path), labels_path, mean, std,
                 num_classes) {}

IdxDataset::IdxDataset(const std::vector<uint8_t>& image_bytes, const std::string& images_path,
                       const std::vector<uint8_t>& label_bytes, const std::string& labels_path, float mean,
                       float std, int64_t num_classes)
    : mean_(mean), std_(std), num_classes_(num_classes) {
  std::vector<uint32_t> idims = parse_header(image_bytes, images_path, kImageMagic, 3, "images");
  std::vector<uint32_t> ldims = parse_header(label_bytes, labels_path, kLabelMagic, 1, "labels");
  if (idims[0] != ldims[0]) {
    throw Error(images_path + " holds " + std::to_string(idims[0]) + " images but " + labels_path +
                " holds " + std::to_string(ldims[0]) + " labels");
  }
  const int64_t n = idims[0], h = idims[1], w = idims[2];
  images_ = torch::empty({n, h, w}, torch::kUInt8);
  // An empty file has no storage: memcpy to its null data pointer would be undefined.
  if (n > 0) {
    std::memcpy(images_.data_ptr<uint8_t>(), image_bytes.data() + 16, static_cast<size_t>(n * h * w));
  }
  labels_ = torch::empty({n}, torch::kInt64);
  int64_t* lp = labels_.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t v = label_bytes[8 + i];
    if (v >= num_classes) {
      throw Error(labels_path + ": label " + std::to_string(v) + " at item " + std::to_string(i) +
                  " is not below " + std::to_string(num_classes));
    }
    lp[i] = v;
  }
}

Batch IdxDataset::get(const std::vector<int64_t>& indices, uint64_t /*seed*/) const {
  torch::Tensor idx = index_tensor(indices, size());
  torch::Tensor x = images_.index_select(0, idx).to(torch::kFloat32);
  // (x/255 - mean)/std in one fused pass: x * a + b.
  const float a = 1.0f / (255.0f * std_), b = -mean_ / std_;
  x.mul_(a).add_(b);
  return {x.unsqueeze(1), labels_.index_select(0, idx)};
}

DatasetSplits load_idx_dir(const std::string& dir, float mean, float std) {
  auto find = [&](const std::string& stem) {
    const std::string base = dir + "/" + stem;
    std::string p = find_plain_or_gz(base);
    if (p.empty()) throw Error(base + "(.gz): file not found (set dataset.path to the IDX directory)");
    return p;
  };
  DatasetSplits s;
  s.train = std::make_shared<IdxDataset>(find("train-images-idx3-ubyte"), find("train-labels-idx1-ubyte"),
                                         mean, std);
  s.test =
      std::make_shared<IdxDataset>(find("t10k-images-idx3-ubyte"), find("t10k-labels-idx1-ubyte"), mean, std);
  return s;
}

}  // namespace dynamix
