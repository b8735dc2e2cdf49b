// DYNAMIX — CIFAR binary parsing; augmentation is a per-sample crop/flip keyed by (seed, index).
#include "datasets/cifar_dataset.h"

#include <cstring>

#include "datasets/file_reader.h"
#include "datasets/idx_dataset.h"
#include "datasets/sample_rng.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

constexpr int64_t kPixels = 3 * 32 * 32;
constexpr int64_t kPad = 4;

}  // namespace

// Per-channel training-set statistics, as commonly published for the two data sets.
CifarFormat cifar10_format() { return {1, 10, {0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}}; }
CifarFormat cifar100_format() { return {2, 100, {0.5071f, 0.4865f, 0.4409f}, {0.2673f, 0.2564f, 0.2762f}}; }

namespace {
std::vector<std::vector<uint8_t>> read_all(const std::vector<std::string>& files) {
  std::vector<std::vector<uint8_t>> contents;
  for (const std::string& f : files) contents.push_back(read_maybe_gz(f));
  return contents;
}
}  // namespace

CifarDataset::CifarDataset(const std::vector<std::string>& files, const CifarFormat& format, bool augment)
    : CifarDataset(files, read_all(files), format, augment) {}

CifarDataset::CifarDataset(const std::vector<std::string>& files,
                           const std::vector<std::vector<uint8_t>>& contents, const CifarFormat& format,
                           bool augment)
    : format_(format), augment_(augment) {
  DYNAMIX_CHECK(files.size() == contents.size(), "CifarDataset: " + std::to_string(files.size()) +
                                                     " names for " + std::to_string(contents.size()) +
                                                     " files");
  const int64_t record = format.label_bytes + kPixels;
  int64_t n = 0;
  for (size_t fi = 0; fi < files.size(); ++fi) {
    const std::string& f = files[fi];
    const int64_t bytes = static_cast<int64_t>(contents[fi].size());
    if (bytes == 0 || bytes % record != 0) {
      throw Error(f + ": truncated or not a CIFAR file: " + std::to_string(bytes) +
                  " bytes is not a positive multiple of the " + std::to_string(record) +
                  "-byte record (last record has " + std::to_string(bytes % record) + " bytes)");
    }
    n += bytes / record;
  }
  images_ = torch::empty({n, 3, 32, 32}, torch::kUInt8);
  labels_ = torch::empty({n}, torch::kInt64);
  uint8_t* ip = images_.data_ptr<uint8_t>();
  int64_t* lp = labels_.data_ptr<int64_t>();
  int64_t row = 0;
  for (size_t fi = 0; fi < files.size(); ++fi) {
    const std::vector<uint8_t>& b = contents[fi];
    for (int64_t r = 0; r < static_cast<int64_t>(b.size()) / record; ++r, ++row) {
      const uint8_t* rec = b.data() + r * record;
      const int64_t label = rec[format.label_bytes - 1];  // CIFAR-100: the fine label is second
      if (label >= format.num_classes) {
        throw Error(files[fi] + ": label " + std::to_string(label) + " in record " + std::to_string(r) +
                    " is not below " + std::to_string(format.num_classes));
      }
      lp[row] = label;
      std::memcpy(ip + row * kPixels, rec + format.label_bytes, kPixels);
    }
  }
  scale_ = torch::empty({1, 3, 1, 1});
  bias_ = torch::empty({1, 3, 1, 1});
  for (int c = 0; c < 3; ++c) {
    scale_.data_ptr<float>()[c] = 1.0f / (255.0f * format.std[c]);
    bias_.data_ptr<float>()[c] = -format.mean[c] / format.std[c];
  }
}

Batch CifarDataset::get(const std::vector<int64_t>& indices, uint64_t seed) const {
  torch::Tensor idx = index_tensor(indices, size());
  torch::Tensor x = images_.index_select(0, idx);
  if (augment_) {
    // Zero (black) padding before normalization, as torchvision's RandomCrop(32, padding=4).
    torch::Tensor padded = torch::constant_pad_nd(x, {kPad, kPad, kPad, kPad}, 0);
    for (int64_t k = 0; k < static_cast<int64_t>(indices.size()); ++k) {
      SampleRng rng(seed, static_cast<uint64_t>(indices[k]), /*stream=*/1);
      const int64_t dy = static_cast<int64_t>(rng.below(2 * kPad + 1));
      const int64_t dx = static_cast<int64_t>(rng.below(2 * kPad + 1));
      torch::Tensor crop = padded[k].slice(1, dy, dy + 32).slice(2, dx, dx + 32);
      if (rng.below(2) == 1) crop = crop.flip({2});
      x[k].copy_(crop);
    }
  }
  return {x.to(torch::kFloat32).mul_(scale_).add_(bias_), labels_.index_select(0, idx)};
}

DatasetSplits load_cifar_dir(const std::string& dir, bool cifar100, bool augment) {
  const std::string first = cifar100 ? "train.bin" : "data_batch_1.bin";
  std::string base = dir;
  if (find_plain_or_gz(base + "/" + first).empty()) {
    const std::string sub = dir + (cifar100 ? "/cifar-100-binary" : "/cifar-10-batches-bin");
    if (!find_plain_or_gz(sub + "/" + first).empty()) base = sub;
  }
  auto find = [&](const std::string& name) {
    std::string p = find_plain_or_gz(base + "/" + name);
    if (p.empty()) {
      throw Error(base + "/" + name + "(.gz): file not found (set dataset.path to the CIFAR binary folder)");
    }
    return p;
  };
  std::vector<std::string> train, test;
  if (cifar100) {
    train = {find("train.bin")};
    test = {find("test.bin")};
  } else {
    for (int i = 1; i <= 5; ++i) train.push_back(find("data_batch_" + std::to_string(i) + ".bin"));
    test = {find("test_batch.bin")};
  }
  const CifarFormat fmt = cifar100 ? cifar100_format() : cifar10_format();
  return {std::make_shared<CifarDataset>(train, fmt, augment),
          std::make_shared<CifarDataset>(test, fmt, false)};
}

}  // namespace dynamix
