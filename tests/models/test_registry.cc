// DYNAMIX — the model registry: names, errors a user can act on.
#include <gtest/gtest.h>

#include <algorithm>

#include "framework/core/error.h"
#include "models/registry.h"

namespace dynamix {
namespace {

bool has_name(const std::string& n) {
  auto names = model_names();
  return std::find(names.begin(), names.end(), n) != names.end();
}

TEST(Registry, ListsSortedNames) {
  auto names = model_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_TRUE(has_name("cnn"));
  EXPECT_TRUE(has_name("mlp"));
}

TEST(Registry, UnknownNameListsKnownNames) {
  try {
    make_model("lenet9000", ModelSpec{{1, 28, 28}, 10, "classify"});
    FAIL() << "no error for an unknown name";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("lenet9000"), std::string::npos) << what;
    for (const auto& n : model_names()) EXPECT_NE(what.find(n), std::string::npos) << n << " in " << what;
  }
}

TEST(Registry, RejectsUnfitSpecs) {
  EXPECT_THROW(make_model("cnn", ModelSpec{{28, 28}, 10, "classify"}), Error);
  EXPECT_THROW(make_model("cnn", ModelSpec{{1, 2, 2}, 10, "classify"}), Error);
  EXPECT_THROW(make_model("cnn", ModelSpec{{1, 28, 28}, 0, "classify"}), Error);
  EXPECT_THROW(make_model("cnn", ModelSpec{{1, 28, 28}, 10, "mlm"}), Error);
  EXPECT_THROW(make_model("mlp", ModelSpec{{}, 10, "classify"}), Error);
}

}  // namespace
}  // namespace dynamix
