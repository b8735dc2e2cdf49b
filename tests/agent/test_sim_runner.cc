// DYNAMIX — run_sim: every policy on the same cluster, the table, and contract outputs per policy.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/sim/sim_runner.h"
#include "agent/static_policy.h"
#include "framework/core/error.h"

namespace dynamix {
namespace {

namespace fs = std::filesystem;

class SimRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("dynamix_sim_run_" + std::to_string(getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  SimRunOptions options() const {
    SimRunOptions o;
    o.config = parse_sim_config("{profile: hetero4, seed: 2, workload: {target_progress: 300}}");
    o.bounds.min = 1;
    o.bounds.max = {256};
    o.bounds.fixed_global = true;
    o.initial_plan = {32};
    o.window = 20;
    o.output_dir = dir_.string();
    return o;
  }
  fs::path dir_;
};

TEST_F(SimRunnerTest, WritesContractOutputsAndTable) {
  std::ostringstream table;
  SimRunOptions o = options();
  o.log = &table;
  ASSERT_EQ(run_sim(o), 0);
  const std::string text = table.str();
  for (const char* p : {"static", "proportional", "gns", "time_to_target_s", "vs_static"}) {
    EXPECT_NE(text.find(p), std::string::npos) << text;
  }
  double static_time = 0;
  for (const char* policy : {"static", "proportional", "gns"}) {
    const fs::path d = dir_ / policy;
    std::ifstream in(d / "summary.json");
    ASSERT_TRUE(in.good()) << d;
    const nlohmann::json s = nlohmann::json::parse(in);
    EXPECT_EQ(s["world_size"], 4);
    EXPECT_EQ(s["policy"], policy);
    EXPECT_EQ(s["model"], "sim");
    ASSERT_TRUE(s["time_to_target_s"].is_number());
    const double t = s["time_to_target_s"].get<double>();
    if (std::string(policy) == "static")
      static_time = t;
    else
      EXPECT_LT(t, 0.8 * static_time) << policy << " should beat static on 1:1:0.5:0.25";
    for (const char* key : {"steps", "total_time_s", "mean_throughput", "mean_wait_fraction"}) {
      EXPECT_TRUE(s.contains(key)) << key;
    }
    std::ifstream dec(d / "decisions.jsonl");
    std::string line;
    ASSERT_TRUE(std::getline(dec, line));
    const nlohmann::json first = nlohmann::json::parse(line);
    EXPECT_EQ(first["plan"].size(), 4u);
    EXPECT_EQ(first["policy"], policy);
    EXPECT_TRUE(fs::exists(d / "sim_windows.jsonl"));
  }
  // The shared contract checker, when present next to the repository.
  const fs::path checker = fs::path(DYNAMIX_SOURCE_DIR) / ".." / "shared" / "tools" / "check-outputs.py";
  if (fs::exists(checker) && std::system("python3 --version > /dev/null 2>&1") == 0) {
    for (const char* policy : {"static", "proportional", "gns"}) {
      const std::string cmd =
          "python3 " + checker.string() + " " + (dir_ / policy).string() + " --sim > /dev/null";
      EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    }
  }
}

TEST_F(SimRunnerTest, FactoryIsUsedAndUnknownNamesFail) {
  SimRunOptions o = options();
  o.output_dir.clear();
  o.policies = {"custom"};
  int built = 0;
  o.factory = [&](const std::string& name, const BatchBounds& b, const std::vector<int32_t>& init) {
    EXPECT_EQ(name, "custom");
    EXPECT_EQ(b.global_batch, 128);  // resolved from the initial plan
    EXPECT_EQ(init.size(), 4u);
    ++built;
    return std::unique_ptr<BatchPolicy>(new StaticPolicy({init}));
  };
  const auto results = run_sim_policies(o);
  EXPECT_EQ(built, 1);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_GT(results[0].totals.time_to_target_s, 0);
  o.factory = nullptr;
  o.policies = {"nosuch"};
  EXPECT_THROW(run_sim_policies(o), Error);
}

}  // namespace
}  // namespace dynamix
