// DYNAMIX tests — IDX reader: raw and gzip round trips, each validation error, the real data set.
#include <gtest/gtest.h>

#include <functional>

#include "datasets/dataset.h"
#include "datasets/file_reader.h"
#include "datasets/idx_dataset.h"
#include "framework/core/error.h"
#include "tests/datasets/temp_dir.h"

namespace dynamix {
namespace {

using testing::error_of;
using testing::put_be32;
using testing::TempDir;
using testing::write_bytes;

std::vector<uint8_t> idx_images(uint32_t n, uint32_t h, uint32_t w, uint32_t magic = 0x803) {
  std::vector<uint8_t> b;
  put_be32(b, magic);
  put_be32(b, n);
  put_be32(b, h);
  put_be32(b, w);
  for (uint32_t i = 0; i < n * h * w; ++i) b.push_back(static_cast<uint8_t>((i * 7 + i / (h * w)) % 256));
  return b;
}

std::vector<uint8_t> idx_labels(uint32_t n, uint32_t magic = 0x801) {
  std::vector<uint8_t> b;
  put_be32(b, magic);
  put_be32(b, n);
  for (uint32_t i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>((i * 3) % 10));
  return b;
}

// Writes a full four-file IDX directory (train n1, test n2).
void write_idx_dir(const TempDir& d, bool gz, uint32_t n1 = 12, uint32_t n2 = 5) {
  const std::string ext = gz ? ".gz" : "";
  write_bytes(d.file("train-images-idx3-ubyte" + ext), idx_images(n1, 28, 28), gz);
  write_bytes(d.file("train-labels-idx1-ubyte" + ext), idx_labels(n1), gz);
  write_bytes(d.file("t10k-images-idx3-ubyte" + ext), idx_images(n2, 28, 28), gz);
  write_bytes(d.file("t10k-labels-idx1-ubyte" + ext), idx_labels(n2), gz);
}

void check_round_trip(bool gz) {
  TempDir d;
  write_idx_dir(d, gz);
  DatasetSplits s = load_dataset({"fashion_mnist", d.path()});
  ASSERT_EQ(s.train->size(), 12);
  ASSERT_EQ(s.test->size(), 5);
  EXPECT_EQ(s.train->sample_shape(), (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(s.train->num_classes(), 10);
  EXPECT_EQ(s.train->task(), "classify");
  Batch b = s.train->get({3, 0, 11}, 7);
  ASSERT_EQ(b.inputs.sizes(), (std::vector<int64_t>{3, 1, 28, 28}));
  EXPECT_EQ(b.inputs.dtype(), torch::kFloat32);
  EXPECT_EQ(b.targets.dtype(), torch::kInt64);
  std::vector<uint8_t> raw = idx_images(12, 28, 28);
  const int64_t order[3] = {3, 0, 11};
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(b.targets[k].item<int64_t>(), (order[k] * 3) % 10);
    for (int p : {0, 1, 400, 783}) {
      const float px = raw[16 + order[k] * 784 + p];
      const float want = (px / 255.0f - 0.2860f) / 0.3530f;
      EXPECT_NEAR(b.inputs[k][0][p / 28][p % 28].item<float>(), want, 1e-5);
    }
  }
}

TEST(Idx, RoundTripRaw) { check_round_trip(false); }
TEST(Idx, RoundTripGzip) { check_round_trip(true); }

TEST(Idx, MnistUsesItsOwnNormalization) {
  TempDir d;
  write_idx_dir(d, false);
  Batch b = load_dataset({"mnist", d.path()}).train->get({0}, 0);
  EXPECT_NEAR(b.inputs[0][0][0][0].item<float>(), (0.0f - 0.1307f) / 0.3081f, 1e-5);
}

TEST(Idx, BadMagic) {
  TempDir d;
  write_bytes(d.file("img"), idx_images(4, 28, 28, 0x801));
  write_bytes(d.file("lbl"), idx_labels(4));
  std::string msg = error_of([&] { IdxDataset(d.file("img"), d.file("lbl"), 0.f, 1.f); });
  EXPECT_NE(msg.find("bad IDX magic 0x00000801"), std::string::npos) << msg;
  EXPECT_NE(msg.find(d.file("img")), std::string::npos) << msg;
}

TEST(Idx, TruncatedImagesRawAndGzip) {
  for (bool gz : {false, true}) {
    TempDir d;
    std::vector<uint8_t> img = idx_images(4, 28, 28);
    img.resize(img.size() - 100);
    write_bytes(d.file("img"), img, gz);
    write_bytes(d.file("lbl"), idx_labels(4));
    std::string msg = error_of([&] { IdxDataset(d.file("img"), d.file("lbl"), 0.f, 1.f); });
    EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(16 + 4 * 784) + " bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(16 + 4 * 784 - 100)), std::string::npos) << msg;
  }
}

TEST(Idx, CutGzipStreamIsAnError) {
  TempDir d;
  write_bytes(d.file("img.gz"), idx_images(50, 28, 28), true);
  std::vector<uint8_t> z = read_maybe_gz(d.file("img.gz"));  // sanity: full stream decodes
  ASSERT_EQ(z.size(), 16u + 50 * 784);
  std::ifstream in(d.file("img.gz"), std::ios::binary);
  std::vector<uint8_t> gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  gz.resize(gz.size() / 2);
  write_bytes(d.file("cut.gz"), gz);
  std::string msg = error_of([&] { read_maybe_gz(d.file("cut.gz")); });
  EXPECT_NE(msg.find(d.file("cut.gz")), std::string::npos) << msg;
  EXPECT_NE(msg.find("gzip"), std::string::npos) << msg;
}

TEST(Idx, CountMismatch) {
  TempDir d;
  write_bytes(d.file("img"), idx_images(6, 28, 28));
  write_bytes(d.file("lbl"), idx_labels(5));
  std::string msg = error_of([&] { IdxDataset(d.file("img"), d.file("lbl"), 0.f, 1.f); });
  EXPECT_NE(msg.find("6 images but"), std::string::npos) << msg;
  EXPECT_NE(msg.find("5 labels"), std::string::npos) << msg;
}

TEST(Idx, LabelOutOfRange) {
  TempDir d;
  std::vector<uint8_t> lbl = idx_labels(4);
  lbl[8 + 2] = 10;
  write_bytes(d.file("img"), idx_images(4, 28, 28));
  write_bytes(d.file("lbl"), lbl);
  std::string msg = error_of([&] { IdxDataset(d.file("img"), d.file("lbl"), 0.f, 1.f); });
  EXPECT_NE(msg.find("label 10 at item 2"), std::string::npos) << msg;
}

TEST(Idx, MissingFile) {
  TempDir d;
  write_idx_dir(d, false);
  std::filesystem::remove(d.file("t10k-labels-idx1-ubyte"));
  std::string msg = error_of([&] { load_dataset({"fashion_mnist", d.path()}); });
  EXPECT_NE(msg.find(d.file("t10k-labels-idx1-ubyte")), std::string::npos) << msg;
  EXPECT_NE(msg.find("not found"), std::string::npos) << msg;
}

TEST(Idx, IndexOutOfRange) {
  TempDir d;
  write_idx_dir(d, false);
  auto s = load_dataset({"fashion_mnist", d.path()});
  std::string msg = error_of([&] { s.test->get({0, 5}, 0); });
  EXPECT_NE(msg.find("index 5 out of range [0, 5)"), std::string::npos) << msg;
}

// Found by fuzzing (tests/fuzz/fuzz_idx.cc), with the in-memory constructor the fuzzer uses.
TEST(Idx, EmptyFilesGiveAnEmptyDataset) {
  // Zero images: no storage to copy into (memcpy to a null pointer was undefined behaviour).
  IdxDataset ds(idx_images(0, 28, 28), "img", idx_labels(0), "lbl", 0.f, 1.f);
  EXPECT_EQ(ds.size(), 0);
  EXPECT_EQ(ds.sample_shape(), (std::vector<int64_t>{1, 28, 28}));
}

TEST(Idx, HeaderSizeThatOverflowsIsTruncation) {
  // 4 x 2^31 x 2^31 wraps to 0 in 64 bits: the bare header used to pass the size check and
  // torch then threw its own error without the file name.
  std::vector<uint8_t> img;
  for (uint32_t v : {0x803u, 4u, 1u << 31, 1u << 31}) put_be32(img, v);
  std::string msg = error_of([&] { IdxDataset(img, "img", idx_labels(4), "lbl", 0.f, 1.f); });
  EXPECT_EQ(msg,
            "img: truncated file: header declares 4 x 2147483648 x 2147483648 items, more than the 16 "
            "bytes the file has");
}

TEST(Idx, InMemoryMatchesFile) {
  TempDir d;
  write_bytes(d.file("img"), idx_images(3, 5, 7), /*gz=*/true);
  write_bytes(d.file("lbl"), idx_labels(3));
  IdxDataset from_file(d.file("img"), d.file("lbl"), 0.f, 1.f);
  IdxDataset in_memory(idx_images(3, 5, 7), "img", idx_labels(3), "lbl", 0.f, 1.f);
  EXPECT_TRUE(torch::equal(from_file.images(), in_memory.images()));
  EXPECT_TRUE(torch::equal(from_file.labels(), in_memory.labels()));
}

TEST(Idx, RealFashionMnist) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (find_plain_or_gz(dir + "/train-images-idx3-ubyte").empty()) {
    GTEST_SKIP() << dir << " not present (Debian package dataset-fashion-mnist)";
  }
  DatasetSplits s = load_dataset({"fashion_mnist", ""});
  ASSERT_EQ(s.train->size(), 60000);
  ASSERT_EQ(s.test->size(), 10000);
  for (const auto& ds : {s.train, s.test}) {
    const torch::Tensor& y = static_cast<IdxDataset&>(*ds).labels();
    EXPECT_EQ(y.min().item<int64_t>(), 0);
    EXPECT_EQ(y.max().item<int64_t>(), 9);
    // Fashion-MNIST is balanced: every class has exactly a tenth of the split.
    EXPECT_EQ(torch::bincount(y).min().item<int64_t>(), ds->size() / 10);
  }
  // Normalized with the training mean/std, the training set has mean ~0 and std ~1 (every 6th image).
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < 60000; i += 6) idx.push_back(i);
  torch::Tensor x = s.train->get(idx, 0).inputs;
  EXPECT_NEAR(x.mean().item<float>(), 0.0f, 0.02f);
  EXPECT_NEAR(x.std().item<float>(), 1.0f, 0.02f);
}

}  // namespace
}  // namespace dynamix
