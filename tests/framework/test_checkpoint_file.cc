// DYNAMIX — checkpoint container: round trip, atomic replace, clear errors for bad files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "framework/core/error.h"
#include "framework/train/checkpoint_file.h"
#include "tests/test_util.h"

namespace dynamix {
namespace {

namespace fs = std::filesystem;

class CheckpointFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dynamix_ckpt_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    path_ = (dir_ / "checkpoint.pt").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string slurp() {
    std::ifstream in(path_, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  void spit(const std::string& s) { std::ofstream(path_, std::ios::binary | std::ios::trunc) << s; }
  std::string error_of() {
    return testing::error_of([&] { read_checkpoint_file(path_); });
  }
  fs::path dir_;
  std::string path_;
};

TEST_F(CheckpointFile, RoundTripAndReplace) {
  std::string payload(100000, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 31);
  write_checkpoint_file(path_, payload);
  EXPECT_EQ(read_checkpoint_file(path_), payload);
  write_checkpoint_file(path_, "second");
  EXPECT_EQ(read_checkpoint_file(path_), "second");
  for (const auto& e : fs::directory_iterator(dir_)) EXPECT_EQ(e.path().filename(), "checkpoint.pt");
}

TEST_F(CheckpointFile, TruncatedFileIsNamed) {
  write_checkpoint_file(path_, std::string(5000, 'x'));
  const std::string full = slurp();
  spit(full.substr(0, full.size() - 100));
  const std::string err = error_of();
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
  EXPECT_NE(err.find(path_), std::string::npos) << err;
  spit(full.substr(0, 12));
  EXPECT_NE(error_of().find("truncated header"), std::string::npos);
}

TEST_F(CheckpointFile, CorruptionForeignFilesAndVersions) {
  write_checkpoint_file(path_, std::string(5000, 'x'));
  std::string bytes = slurp();
  bytes[bytes.size() / 2] ^= 0x40;
  spit(bytes);
  EXPECT_NE(error_of().find("checksum mismatch"), std::string::npos);
  spit("PK\x03\x04 a zip file, not ours");
  EXPECT_NE(error_of().find("not a DYNAMIX checkpoint"), std::string::npos);
  write_checkpoint_file(path_, "abc");
  bytes = slurp();
  bytes[8] = 99;  // format version
  spit(bytes);
  EXPECT_NE(error_of().find("version 99 is not supported"), std::string::npos);
  fs::remove(path_);
  EXPECT_NE(error_of().find("cannot open"), std::string::npos);
}

TEST_F(CheckpointFile, FailedWriteLeavesTheGoodCheckpoint) {
  write_checkpoint_file(path_, "good");
  // Block the temporary file's name with a directory: the write must fail before touching path_.
  const fs::path blocker = path_ + ".tmp." + std::to_string(::getpid());
  fs::create_directories(blocker);
  EXPECT_THROW(write_checkpoint_file(path_, "replacement"), Error);
  EXPECT_EQ(read_checkpoint_file(path_), "good");
  fs::remove_all(blocker);
  EXPECT_THROW(write_checkpoint_file((dir_ / "missing" / "c.pt").string(), "x"), Error);
}

}  // namespace
}  // namespace dynamix
