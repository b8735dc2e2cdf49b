// DYNAMIX — config inputs found by fuzzing (tests/fuzz/fuzz_config.cc), kept as regression tests.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework/config/config.h"
#include "framework/core/error.h"
#include "tests/test_util.h"

namespace dynamix {
namespace {

std::string error_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  return testing::error_of([&] { parse_config(yaml, "x.yaml", overrides); });
}

// The emitter replaced invalid UTF-8, so the saved config.yaml named another output.dir than the
// run used; such text is now rejected where it is read, with line, column and byte.
TEST(ConfigFuzz, InvalidUtf8IsRejectedWithItsPlace) {
  EXPECT_EQ(error_of("model: cnn\noutput: {dir: \"12\3443\"}\n"),
            "x.yaml:2:18: not valid UTF-8 (byte 0xe4); YAML text must be UTF-8");
  EXPECT_EQ(error_of("", {"output.dir=\"12\3443\""}),
            "x.yaml: override:1:15: not valid UTF-8 (byte 0xe4); YAML text must be UTF-8");
  // In the key of an override too: it becomes a key of the saved YAML (here inside `sim:`).
  EXPECT_NE(error_of("sim:\n", {"sim.node\xff=3"}).find("override:1:9: not valid UTF-8 (byte 0xff)"),
            std::string::npos);
  // Overlong forms, surrogates and truncated sequences are not UTF-8 either.
  for (const char* bad : {"\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"}) {
    EXPECT_NE(error_of(std::string("model: a") + bad).find("not valid UTF-8"), std::string::npos) << bad;
  }
}

TEST(ConfigFuzz, Utf8TextRoundTripsThroughTheSavedSource) {
  const Config c =
      parse_config("output: {dir: \"runs/caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x9a\x80\"}\n", "x.yaml");
  EXPECT_EQ(c.output.dir, "runs/caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x9a\x80");
  EXPECT_EQ(parse_config(c.source, "config.yaml").output.dir, c.output.dir);
}

}  // namespace
}  // namespace dynamix
