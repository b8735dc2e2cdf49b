// DYNAMIX tests — .npy reader: NumPy-written files of each dtype and version, each header and size
// error, the data set's checks across arrays and splits, and that the data stay memory-mapped.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "datasets/dataset.h"
#include "datasets/npy_array.h"
#include "datasets/npy_dataset.h"
#include "framework/core/error.h"
#include "tests/datasets/npy_writer.h"
#include "tests/datasets/temp_dir.h"

namespace dynamix {
namespace {

using testing::error_of;
using testing::npy_bytes;
using testing::npy_data;
using testing::npy_header_dict;
using testing::TempDir;
using testing::write_bytes;

const std::string kFixtures = std::string(DYNAMIX_SOURCE_DIR) + "/tests/datasets/npy/";

// n samples of shape (2, 3) as float32 valued i, and labels i % classes as int64.
void write_split(const TempDir& d, const std::string& split, int64_t n, int64_t classes = 3) {
  std::vector<float> x(static_cast<size_t>(n * 6));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  std::vector<int64_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) y[static_cast<size_t>(i)] = i % classes;
  write_bytes(d.file(split + "_inputs.npy"),
              npy_bytes(npy_header_dict("<f4", "(" + std::to_string(n) + ", 2, 3)"), npy_data(x)));
  write_bytes(d.file(split + "_labels.npy"),
              npy_bytes(npy_header_dict("<i8", "(" + std::to_string(n) + ",)"), npy_data(y)));
}

std::string load_error(const std::vector<uint8_t>& bytes) {
  TempDir d;
  write_bytes(d.file("a.npy"), bytes);
  const std::string msg = error_of([&] { load_npy(d.file("a.npy")); });
  EXPECT_NE(msg.find(d.file("a.npy")), std::string::npos) << "the error names the file: " << msg;
  return msg;
}

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

TEST(Npy, NumpyWrittenFilesOfEveryDtypeAndVersion) {
  const std::vector<std::pair<std::string, torch::ScalarType>> files = {
      {"v1_f2", torch::kFloat16}, {"v1_f4", torch::kFloat32}, {"v1_f8", torch::kFloat64},
      {"v1_u1", torch::kUInt8},   {"v1_i1", torch::kInt8},    {"v1_i2", torch::kInt16},
      {"v1_i4", torch::kInt32},   {"v1_i8", torch::kInt64},   {"v1_b1", torch::kBool},
      {"v2_f4", torch::kFloat32}, {"v3_f4", torch::kFloat32}, {"v2_i8", torch::kInt64},
      {"v3_u1", torch::kUInt8}};
  const torch::Tensor values = torch::arange(24, torch::kFloat64).reshape({4, 2, 3});
  for (const auto& [name, type] : files) {
    SCOPED_TRACE(name);
    const NpyArray a = load_npy(kFixtures + name + ".npy");
    EXPECT_EQ(a.data.scalar_type(), type);
    ASSERT_EQ(a.data.sizes(), (std::vector<int64_t>{4, 2, 3}));
    const torch::Tensor want = type == torch::kBool ? values.fmod(2) : values;
    EXPECT_TRUE(a.data.to(torch::kFloat64).equal(want));
  }
}

TEST(Npy, HeaderVariantsNumpyAccepts) {
  // Double quotes, keys in another order, no trailing comma, a 0-d and an empty array, version 2.
  const std::vector<float> one = {2.5f};
  const std::vector<uint8_t> v2 =
      npy_bytes("{\"shape\": (1, 1), \"descr\": \"<f4\", \"fortran_order\": False}", npy_data(one), 2);
  const NpyHeader a = parse_npy_header(v2.data(), v2.size(), "x.npy");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(a.data_offset, v2.size() - sizeof(float));
  EXPECT_EQ(a.data_offset % 64, 0u);
  std::vector<uint8_t> scalar = npy_bytes(npy_header_dict("<f4", "()"), npy_data(one));
  EXPECT_TRUE(parse_npy_header(scalar.data(), scalar.size(), "x.npy").shape.empty());
  std::vector<uint8_t> empty = npy_bytes(npy_header_dict("<f8", "(0, 5)"), {});
  EXPECT_EQ(parse_npy_header(empty.data(), empty.size(), "x.npy").data_bytes, 0u);
}

TEST(Npy, BadMagicAndVersion) {
  std::vector<uint8_t> b = npy_bytes(npy_header_dict("<f4", "(2,)"), npy_data(std::vector<float>{1, 2}));
  std::vector<uint8_t> bad = b;
  bad[1] = 'X';
  EXPECT_HAS(load_error(bad), "not a .npy file (bad magic");
  EXPECT_HAS(load_error({}), "bad magic");
  bad = b;
  bad[6] = 4;
  EXPECT_HAS(load_error(bad), "unsupported .npy format version 4.0");
}

TEST(Npy, TruncatedHeader) {
  std::vector<uint8_t> b = npy_bytes(npy_header_dict("<f4", "(2,)"), npy_data(std::vector<float>{1, 2}));
  EXPECT_HAS(load_error({b.begin(), b.begin() + 9}), "truncated .npy header");
  EXPECT_HAS(load_error({b.begin(), b.begin() + 40}), "truncated .npy header: it declares 118 bytes");
}

TEST(Npy, MalformedHeaderDict) {
  const std::vector<uint8_t> none;
  EXPECT_HAS(load_error(npy_bytes("{'descr': '<f4', 'shape': (0,), }", none)),
             "needs the keys 'descr', 'fortran_order' and 'shape'");
  EXPECT_HAS(load_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0,), 'x': 1}", none)),
             "unexpected key 'x'");
  EXPECT_HAS(load_error(npy_bytes("{'descr': '<f4', 'fortran_order': Nope, 'shape': (0,)}", none)),
             "must be True or False");
  EXPECT_HAS(load_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", none)),
             "non-negative integer");
  EXPECT_HAS(load_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0,", none)),
             "bad .npy header");
  EXPECT_HAS(load_error(npy_bytes(npy_header_dict("<f4", "(99999999999999999999,)"), none)), "too large");
  EXPECT_HAS(load_error(npy_bytes(npy_header_dict("<f8", "(4294967296, 4294967296, 4294967296)"), none)),
             "too large");
}

TEST(Npy, UnsupportedLayoutsAndDtypes) {
  const std::vector<uint8_t> four(16, 0);
  EXPECT_HAS(load_error(npy_bytes(npy_header_dict("<f4", "(2, 2)", true), four)), "fortran_order is True");
  EXPECT_HAS(load_error(npy_bytes(npy_header_dict(">f4", "(4,)"), four)), "big-endian dtype '>f4'");
  EXPECT_HAS(load_error(npy_bytes(npy_header_dict("<u2", "(8,)"), four)), "unsupported .npy dtype '<u2'");
  EXPECT_HAS(load_error(npy_bytes(npy_header_dict("<c8", "(2,)"), four)), "unsupported .npy dtype '<c8'");
  EXPECT_HAS(load_error(npy_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,)}", four)),
             "structured dtypes");
  // Data starting at an even byte that is not a multiple of 8.
  EXPECT_HAS(load_error(npy_bytes(npy_header_dict("<f8", "(2,)"), four, 1, 2)),
             "not aligned to its 8-byte items");
  EXPECT_NO_THROW(load_npy(kFixtures + "v1_u1.npy"));  // '|u1': byte order does not apply
}

TEST(Npy, TruncatedAndTrailingData) {
  std::vector<uint8_t> b = npy_bytes(npy_header_dict("<f4", "(3, 2)"), npy_data(std::vector<float>(6, 1.0f)));
  std::string msg = load_error({b.begin(), b.end() - 1});
  EXPECT_HAS(msg, "truncated file: shape (3, 2) of '<f4' needs 24 data bytes, the file has 23");
  b.push_back(0);
  EXPECT_HAS(load_error(b), "trailing bytes");
}

TEST(Npy, DatasetFromFolderConvertsTypes) {
  TempDir d;
  write_split(d, "train", 10, 3);
  write_split(d, "test", 4, 5);  // labels 0..3: the test split has a class the train split lacks
  DatasetSpec spec{"npy", d.path()};
  const DatasetSplits s = load_dataset(spec);
  ASSERT_EQ(s.train->size(), 10);
  ASSERT_EQ(s.test->size(), 4);
  EXPECT_EQ(s.train->sample_shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(s.train->num_classes(), 4);
  EXPECT_EQ(s.test->num_classes(), 4);
  const Batch b = s.train->get({7, 2}, 0);
  EXPECT_EQ(b.inputs.scalar_type(), torch::kFloat32);
  EXPECT_EQ(b.targets.scalar_type(), torch::kInt64);
  EXPECT_EQ(b.inputs.sizes(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(b.inputs[0][1][2].item<float>(), 7 * 6 + 5);
  EXPECT_EQ(b.targets[0].item<int64_t>(), 7 % 3);
  EXPECT_EQ(b.targets[1].item<int64_t>(), 2);
  EXPECT_HAS(error_of([&] { s.train->get({10}, 0); }), "out of range");
}

TEST(Npy, ExplicitFilesAndInputTypes) {
  // uint8 inputs become float32 values as stored, int32 inputs int64 ids; int32 labels int64.
  const NpyArray u8 = load_npy(kFixtures + "v1_u1.npy"), i4 = load_npy(kFixtures + "v1_i4.npy");
  TempDir d;
  write_bytes(d.file("y.npy"),
              npy_bytes(npy_header_dict("<i4", "(4,)"), npy_data(std::vector<int32_t>{0, 1, 1, 0})));
  const NpyArray y = load_npy(d.file("y.npy"));
  const Batch a = NpyDataset(u8, y, 2).get({3}, 0);
  EXPECT_EQ(a.inputs.scalar_type(), torch::kFloat32);
  EXPECT_EQ(a.inputs[0][1][2].item<float>(), 23.0f);
  const Batch b = NpyDataset(i4, y, 2).get({3}, 0);
  EXPECT_EQ(b.inputs.scalar_type(), torch::kInt64);
  EXPECT_EQ(b.targets.scalar_type(), torch::kInt64);

  DatasetSpec spec{"npy", ""};
  spec.train_inputs = kFixtures + "v1_f4.npy";
  spec.train_labels = d.file("y.npy");
  spec.test_inputs = kFixtures + "v2_f4.npy";
  spec.test_labels = d.file("y.npy");
  EXPECT_EQ(load_dataset(spec).train->size(), 4);
  spec.test_labels = "";
  EXPECT_HAS(error_of([&] { load_dataset(spec); }), "dataset.test_labels: not set");
  spec.test_labels = d.file("missing.npy");
  EXPECT_HAS(error_of([&] { load_dataset(spec); }), d.file("missing.npy") + ": file not found");
}

TEST(Npy, ArraysThatDoNotFitTogether) {
  TempDir d;
  write_split(d, "train", 6);
  write_split(d, "test", 3);
  const std::string x = d.file("train_inputs.npy"), y = d.file("train_labels.npy");
  auto dataset_error = [&] { return error_of([&] { load_dataset({"npy", d.path()}); }); };

  write_bytes(y, npy_bytes(npy_header_dict("<i8", "(5,)"), npy_data(std::vector<int64_t>(5, 0))));
  EXPECT_HAS(dataset_error(), x + " holds 6 samples but " + y + " holds 5 labels");
  write_bytes(y, npy_bytes(npy_header_dict("<f4", "(6,)"), npy_data(std::vector<float>(6, 0))));
  EXPECT_HAS(dataset_error(), y + ": labels must be integer class ids");
  write_bytes(y, npy_bytes(npy_header_dict("<i8", "(6, 1)"), npy_data(std::vector<int64_t>(6, 0))));
  EXPECT_HAS(dataset_error(), "labels must have shape (N,), one class id per sample; got (6, 1)");
  write_bytes(y,
              npy_bytes(npy_header_dict("<i8", "(6,)"), npy_data(std::vector<int64_t>{0, 1, -2, 0, 0, 0})));
  EXPECT_HAS(dataset_error(), y + ": label -2 at item 2 is negative");
  write_bytes(y, npy_bytes(npy_header_dict("<i8", "(6,)"),
                           npy_data(std::vector<int64_t>{0, int64_t{1} << 40, 0, 0, 0, 0})));
  EXPECT_HAS(dataset_error(), y + ": label 1099511627776 at item 1 is not below 16777216");

  write_split(d, "train", 6);
  write_bytes(x, npy_bytes(npy_header_dict("<f8", "(6, 2, 3)"), npy_data(std::vector<double>(36, 0))));
  EXPECT_HAS(dataset_error(), "holds '<f8' but " + d.file("test_inputs.npy") + " holds '<f4'");
  write_bytes(x, npy_bytes(npy_header_dict("<f4", "(6, 3, 2)"), npy_data(std::vector<float>(36, 0))));
  EXPECT_HAS(dataset_error(), "has shape (6, 3, 2) but " + d.file("test_inputs.npy") + " has (3, 2, 3)");
  write_bytes(x, npy_bytes(npy_header_dict("<f4", "(6,)"), npy_data(std::vector<float>(6, 0))));
  write_bytes(d.file("test_inputs.npy"),
              npy_bytes(npy_header_dict("<f4", "(3,)"), npy_data(std::vector<float>(3, 0))));
  EXPECT_HAS(dataset_error(), "inputs need a sample axis and a per-sample shape, got shape (6,)");

  const NpyArray labels = load_npy(d.file("test_labels.npy"));  // 0, 1, 2
  write_split(d, "test", 3);
  EXPECT_HAS(error_of([&] { NpyDataset(load_npy(d.file("test_inputs.npy")), labels, 2); }),
             "label 2 is not below 2 classes");
}

// The arrays are read through a mapping of the file, not copied: the file shows in /proc/self/maps
// while the data set lives and is gone after.
TEST(Npy, DataStayMemoryMapped) {
  TempDir d;
  write_split(d, "train", 2000);
  write_split(d, "test", 10);
  auto mapped = [&] {
    std::ifstream maps("/proc/self/maps");
    std::stringstream all;
    all << maps.rdbuf();
    return all.str().find(d.file("train_inputs.npy")) != std::string::npos;
  };
  {
    const DatasetSplits s = load_dataset({"npy", d.path()});
    EXPECT_TRUE(mapped());
    EXPECT_EQ(s.train->get({1999}, 0).inputs[0][1][2].item<float>(), 1999 * 6 + 5);
  }
  EXPECT_FALSE(mapped());
}

}  // namespace
}  // namespace dynamix
