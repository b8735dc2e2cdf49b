// DYNAMIX — load_config on real files: every example in configs/ parses; missing paths are named.
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "framework/config/config.h"
#include "framework/core/error.h"
#include "tests/test_util.h"

namespace dynamix {
namespace {

namespace fs = std::filesystem;
using testing::error_of;

// Loads one example as a run configuration and checks its per-rank lists against the world they
// are written for (the largest of them).
void expect_run_config(const fs::path& path) {
  SCOPED_TRACE(path.string());
  Config c;
  ASSERT_NO_THROW(c = load_config(path.string())) << error_of([&] { load_config(path.string()); });
  const size_t world =
      std::max({c.batch.init.size(), c.hetero.slowdown.size(), c.hetero.bandwidth_mbps.size(), size_t{1}});
  EXPECT_NO_THROW(validate_for_world(c, static_cast<int>(world)));
}

TEST(ConfigFiles, EveryExampleConfigParses) {
  const fs::path dir = fs::path(DYNAMIX_SOURCE_DIR) / "configs";
  int parsed = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const auto ext = entry.path().extension();
    if (ext != ".yaml" && ext != ".yml") continue;
    expect_run_config(entry.path());
    ++parsed;
  }
  EXPECT_GE(parsed, 2) << "expected the example configs in " << dir;
}

// configs/experiments holds the benchmark cells users run alone (compare_policies.sh) and the
// suite files of scripts/experiments/run_suite.py, which list such cells under `scenarios`.
TEST(ConfigFiles, EveryExperimentCellParsesAndEverySuiteNamesExistingCells) {
  const fs::path root = fs::path(DYNAMIX_SOURCE_DIR);
  int cells = 0, suites = 0;
  for (const auto& entry : fs::directory_iterator(root / "configs" / "experiments")) {
    if (entry.path().extension() != ".yaml") continue;
    const YAML::Node doc = YAML::LoadFile(entry.path().string());
    if (!doc["scenarios"]) {
      expect_run_config(entry.path());
      ++cells;
      continue;
    }
    ++suites;
    for (const auto& scenario : doc["scenarios"]) {
      const fs::path cell = root / scenario["config"].as<std::string>();
      EXPECT_TRUE(fs::is_regular_file(cell)) << entry.path() << " names " << cell;
    }
  }
  EXPECT_GE(cells, 2);
  EXPECT_GE(suites, 1);
}

TEST(ConfigFiles, FashionMnistHeteroExample) {
  const Config c = load_config(std::string(DYNAMIX_SOURCE_DIR) + "/configs/fashion_mnist_hetero.yaml");
  EXPECT_EQ(c.model, "cnn");
  EXPECT_EQ(c.dataset.name, "fashion_mnist");
  EXPECT_EQ(initial_batches(c, 4), (std::vector<int32_t>{32, 32, 32, 32}));
  EXPECT_EQ(c.hetero.slowdown, (std::vector<double>{1.0, 1.0, 1.5, 2.5}));
  EXPECT_EQ(c.train.target_accuracy, 0.85);
  EXPECT_EQ(c.output.dir, "runs/fashion_mnist_hetero");
  EXPECT_EQ(c.policy.name, "dynamix");  // the README's first run is the product's own policy
}

TEST(ConfigFiles, MissingFileIsNamed) {
  const std::string msg = error_of([] { load_config("/nonexistent/dir/run.yaml"); });
  EXPECT_NE(msg.find("/nonexistent/dir/run.yaml"), std::string::npos) << msg;
}

TEST(ConfigFiles, DirectoryIsRejected) {
  const std::string dir = fs::temp_directory_path().string();
  const std::string msg = error_of([&] { load_config(dir); });
  EXPECT_NE(msg.find("is a directory"), std::string::npos) << msg;
}

TEST(ConfigFiles, EmptyFileIsAnErrorNamingIt) {
  const fs::path path =
      fs::temp_directory_path() / ("dynamix_config_empty_" + std::to_string(::getpid()) + ".yaml");
  for (const char* text : {"", "# only a comment\n\n   # and another\n", "---\n"}) {
    {
      std::ofstream out(path);
      out << text;
    }
    const std::string msg = error_of([&] { load_config(path.string(), {"train.lr=0.3"}); });
    EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("is empty"), std::string::npos) << msg;
  }
  fs::remove(path);
}

TEST(ConfigFiles, ErrorsNameTheFileAndOverridesApply) {
  const fs::path path =
      fs::temp_directory_path() / ("dynamix_config_test_" + std::to_string(::getpid()) + ".yaml");
  {
    std::ofstream out(path);
    out << "train:\n  lr: 0.1\n  lrr: 2\n";
  }
  const std::string msg = error_of([&] { load_config(path.string()); });
  EXPECT_NE(msg.find(path.string() + ": unknown key 'train.lrr'"), std::string::npos) << msg;
  {
    std::ofstream out(path);
    out << "train:\n  lr: 0.1\n";
  }
  EXPECT_DOUBLE_EQ(load_config(path.string(), {"train.lr=0.3"}).train.lr, 0.3);
  fs::remove(path);
}

}  // namespace
}  // namespace dynamix
