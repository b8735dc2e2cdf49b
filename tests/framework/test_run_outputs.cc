// DYNAMIX — run outputs: a failed write leaves no partial line and stops all later writes; a
// resume cuts every log to the checkpoint's step.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "framework/train/run_outputs.h"

namespace dynamix {
namespace {

namespace fs = std::filesystem;

class RunOutputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dynamix_outputs_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string slurp(const std::string& name) {
    std::ifstream in(dir_ / name, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void spit(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary | std::ios::trunc) << text;
  }
  fs::path dir_;
};

TEST_F(RunOutputsTest, AFailedAppendLeavesNoPartialLineAndStopsEveryLaterWrite) {
  RunOutputs out(dir_.string(), false, 0);
  out.metrics({{"step", 1}});
  const std::string before = slurp("metrics.jsonl");
  ASSERT_EQ(before, "{\"step\":1}\n");

  // A file size limit stands in for a full disk: write(2) writes up to it, then fails (EFBIG).
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = before.size() + 10;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  out.metrics({{"step", 2}, {"loss", std::string(100, 'x')}});
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);

  EXPECT_EQ(slurp("metrics.jsonl"), before);  // the 10 bytes that fitted were cut
  ASSERT_TRUE(out.failed());
  EXPECT_NE(out.error().find("cannot write " + (dir_ / "metrics.jsonl").string() + ": File too large"),
            std::string::npos)
      << out.error();
  // Nothing after the failure, though there is room again: no gap, no checkpoint past the logs.
  out.metrics({{"step", 3}});
  out.eval({{"step", 3}});
  out.write_checkpoint("payload");
  out.write_summary({{"steps", 3}});
  EXPECT_EQ(slurp("metrics.jsonl"), before);
  EXPECT_EQ(slurp("eval.jsonl"), "");
  EXPECT_FALSE(fs::exists(out.checkpoint_path()));
  EXPECT_FALSE(fs::exists(dir_ / "summary.json"));
}

TEST_F(RunOutputsTest, ResumeCutsEveryLogToTheCheckpointStepInPlace) {
  fs::create_directories(dir_);
  spit("metrics.jsonl", "{\"step\":1}\n{\"step\":2}\n{\"step\":3}\n{\"step\":4}\n");
  spit("eval.jsonl", "{\"step\":2}\n{\"step\":4}\n");
  spit("decisions.jsonl", "{\"window\":0,\"step\":2}\n{\"window\":1,\"st");  // torn by a kill
  {
    RunOutputs out(dir_.string(), true, 3);
    EXPECT_EQ(slurp("metrics.jsonl"), "{\"step\":1}\n{\"step\":2}\n{\"step\":3}\n");
    EXPECT_EQ(slurp("eval.jsonl"), "{\"step\":2}\n");
    EXPECT_EQ(slurp("decisions.jsonl"), "{\"window\":0,\"step\":2}\n");
    out.decision({{"window", 1}, {"step", 4}});
  }
  EXPECT_EQ(slurp("decisions.jsonl"),
            "{\"window\":0,\"step\":2}\n{\"step\":4,\"window\":1}\n");  // keys sorted
  // A line that parses but lost its newline is torn too (the next append would join it).
  spit("metrics.jsonl", "{\"step\":1}\n{\"step\":2}");
  RunOutputs again(dir_.string(), true, 3);
  EXPECT_EQ(slurp("metrics.jsonl"), "{\"step\":1}\n");
  EXPECT_FALSE(again.failed());
}

}  // namespace
}  // namespace dynamix
