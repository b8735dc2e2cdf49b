// DYNAMIX tests — CIFAR-10/100 binary reader and the deterministic crop+flip augmentation.
#include <gtest/gtest.h>

#include <functional>

#include "datasets/cifar_dataset.h"
#include "framework/core/error.h"
#include "tests/datasets/temp_dir.h"

namespace dynamix {
namespace {

using testing::error_of;
using testing::TempDir;
using testing::write_bytes;

uint8_t pixel(int64_t record, int64_t p) {
  return static_cast<uint8_t>((record * 13 + p * 5 + p / 97) % 256);
}

// `count` records starting at global record number `first`; label bytes as CIFAR-10 or -100.
std::vector<uint8_t> cifar_records(int64_t first, int64_t count, bool cifar100) {
  std::vector<uint8_t> b;
  for (int64_t r = first; r < first + count; ++r) {
    if (cifar100) b.push_back(static_cast<uint8_t>(r % 20));  // coarse
    b.push_back(static_cast<uint8_t>(cifar100 ? (r * 7) % 100 : r % 10));
    for (int64_t p = 0; p < 3072; ++p) b.push_back(pixel(r, p));
  }
  return b;
}

void write_cifar10(const TempDir& d, const std::string& sub = "") {
  const std::string dir = sub.empty() ? d.path() : d.file(sub);
  std::filesystem::create_directories(dir);
  for (int i = 1; i <= 5; ++i)
    write_bytes(dir + "/data_batch_" + std::to_string(i) + ".bin", cifar_records((i - 1) * 3, 3, false));
  write_bytes(dir + "/test_batch.bin", cifar_records(100, 2, false), /*gz=*/false);
}

TEST(Cifar, Cifar10RoundTrip) {
  TempDir d;
  write_cifar10(d, "cifar-10-batches-bin");  // parent folder given: the reader descends
  DatasetSplits s = load_dataset({"cifar10", d.path()});
  ASSERT_EQ(s.train->size(), 15);
  ASSERT_EQ(s.test->size(), 2);
  EXPECT_EQ(s.train->num_classes(), 10);
  EXPECT_EQ(s.train->sample_shape(), (std::vector<int64_t>{3, 32, 32}));
  Batch b = s.train->get({14, 4}, 0);
  ASSERT_EQ(b.inputs.sizes(), (std::vector<int64_t>{2, 3, 32, 32}));
  const float mean[3] = {0.4914f, 0.4822f, 0.4465f}, sd[3] = {0.2470f, 0.2435f, 0.2616f};
  const int64_t rec[2] = {14, 4};
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(b.targets[k].item<int64_t>(), rec[k] % 10);
    for (int64_t p : {0, 1023, 1024, 2500, 3071}) {
      const int64_t c = p / 1024, y = (p % 1024) / 32, x = p % 32;
      EXPECT_NEAR(b.inputs[k][c][y][x].item<float>(), (pixel(rec[k], p) / 255.0f - mean[c]) / sd[c], 1e-5);
    }
  }
  EXPECT_EQ(s.test->get({1}, 0).targets[0].item<int64_t>(), 101 % 10);
}

TEST(Cifar, Cifar100UsesFineLabel) {
  TempDir d;
  write_bytes(d.file("train.bin"), cifar_records(0, 4, true), /*gz=*/true);  // name without .gz: gz content
  write_bytes(d.file("test.bin.gz"), cifar_records(10, 3, true), /*gz=*/true);
  DatasetSplits s = load_dataset({"cifar100", d.path()});
  ASSERT_EQ(s.train->size(), 4);
  ASSERT_EQ(s.test->size(), 3);
  EXPECT_EQ(s.train->num_classes(), 100);
  Batch b = s.train->get({0, 1, 2, 3}, 0);
  for (int64_t r = 0; r < 4; ++r) EXPECT_EQ(b.targets[r].item<int64_t>(), (r * 7) % 100);
}

TEST(Cifar, TruncatedFile) {
  TempDir d;
  write_cifar10(d);
  std::vector<uint8_t> cut = cifar_records(0, 3, false);
  cut.resize(cut.size() - 10);
  write_bytes(d.file("data_batch_3.bin"), cut);
  std::string msg = error_of([&] { load_dataset({"cifar10", d.path()}); });
  EXPECT_NE(msg.find(d.file("data_batch_3.bin")), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3073-byte record"), std::string::npos) << msg;
}

TEST(Cifar, MissingFileAndBadLabel) {
  TempDir d;
  write_cifar10(d);
  std::filesystem::remove(d.file("test_batch.bin"));
  std::string msg = error_of([&] { load_dataset({"cifar10", d.path()}); });
  EXPECT_NE(msg.find("test_batch.bin"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not found"), std::string::npos) << msg;

  std::vector<uint8_t> bad = cifar_records(0, 2, false);
  bad[3073] = 10;  // label of the second record
  write_bytes(d.file("test_batch.bin"), bad);
  msg = error_of([&] { load_dataset({"cifar10", d.path()}); });
  EXPECT_NE(msg.find("label 10 in record 1"), std::string::npos) << msg;
}

TEST(Cifar, InMemoryContentsAreNamedInErrors) {
  // The in-memory constructor (used by the file reader and tests/fuzz/fuzz_cifar.cc).
  CifarDataset ds({"a.bin", "b.bin"}, {cifar_records(0, 2, false), cifar_records(2, 1, false)},
                  cifar10_format(), false);
  ASSERT_EQ(ds.size(), 3);
  EXPECT_EQ(ds.labels()[2].item<int64_t>(), 2);
  std::vector<uint8_t> cut = cifar_records(0, 1, false);
  cut.pop_back();
  std::string msg = error_of([&] {
    CifarDataset({"a.bin", "c.bin"}, {cifar_records(0, 1, false), cut}, cifar10_format(), false);
  });
  EXPECT_NE(msg.find("c.bin: truncated or not a CIFAR file: 3072 bytes"), std::string::npos) << msg;
  msg = error_of([&] { CifarDataset({"a.bin"}, {}, cifar10_format(), false); });
  EXPECT_NE(msg.find("1 names for 0 files"), std::string::npos) << msg;
}

// Every augmented image must equal some crop (dy, dx in [0, 8]) of the zero-padded original,
// flipped or not; returns how many of the 162 candidates match.
int matching_transforms(const torch::Tensor& aug, const torch::Tensor& plain,
                        float pad_value_per_channel[3]) {
  torch::Tensor padded = torch::empty({3, 40, 40});
  for (int c = 0; c < 3; ++c) padded[c].fill_(pad_value_per_channel[c]);
  padded.slice(1, 4, 36).slice(2, 4, 36).copy_(plain);
  int matches = 0;
  for (int dy = 0; dy <= 8; ++dy)
    for (int dx = 0; dx <= 8; ++dx) {
      torch::Tensor crop = padded.slice(1, dy, dy + 32).slice(2, dx, dx + 32);
      matches += torch::allclose(aug, crop) + torch::allclose(aug, crop.flip({2}));
    }
  return matches;
}

TEST(Cifar, AugmentationIsDeterministicPerSeedAndIndex) {
  TempDir d;
  write_cifar10(d);
  DatasetSpec spec{"cifar10", d.path()};
  spec.augment = true;
  DatasetSplits s = load_dataset(spec);
  Batch a = s.train->get({2, 7, 11}, 42);
  Batch b = s.train->get({11, 0, 2}, 42);  // same (seed, index) in another batch and position
  EXPECT_TRUE(torch::equal(a.inputs[0], b.inputs[2]));
  EXPECT_TRUE(torch::equal(a.inputs[2], b.inputs[0]));
  EXPECT_TRUE(torch::equal(a.targets[2], b.targets[0]));

  // Different seeds give different augmentations for most samples.
  std::vector<int64_t> all(15);
  for (int64_t i = 0; i < 15; ++i) all[i] = i;
  Batch e1 = s.train->get(all, 1), e2 = s.train->get(all, 2);
  int differ = 0;
  for (int64_t i = 0; i < 15; ++i) differ += !torch::equal(e1.inputs[i], e2.inputs[i]);
  EXPECT_GE(differ, 10);

  // Each augmented image is a crop/flip of its original; the test split is never augmented.
  Batch plain = load_dataset({"cifar10", d.path()}).train->get(all, 0);
  float pad[3] = {-0.4914f / 0.2470f, -0.4822f / 0.2435f, -0.4465f / 0.2616f};
  for (int64_t i = 0; i < 15; ++i) EXPECT_GE(matching_transforms(e1.inputs[i], plain.inputs[i], pad), 1) << i;
  EXPECT_TRUE(torch::equal(s.test->get({0, 1}, 5).inputs, s.test->get({0, 1}, 6).inputs));
}

}  // namespace
}  // namespace dynamix
