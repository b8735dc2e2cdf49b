// DYNAMIX tests — attach-point choice per event from what the kernel offers.
#include <gtest/gtest.h>

#include "bpf/attach_plan.h"

namespace dynamix {
namespace {

TEST(AttachPlan, PrefersRawTracepointThenTracepointThenKprobe) {
  EXPECT_EQ(choose_attach({true, true, true}, AttachKind::kAuto), AttachKind::kRawTracepoint);
  EXPECT_EQ(choose_attach({false, true, true}, AttachKind::kAuto), AttachKind::kTracepoint);
  EXPECT_EQ(choose_attach({false, false, true}, AttachKind::kAuto), AttachKind::kKprobe);
  EXPECT_EQ(choose_attach({false, false, false}, AttachKind::kAuto), AttachKind::kNone);
}

TEST(AttachPlan, ForcedKindOnlyWhenAvailable) {
  EXPECT_EQ(choose_attach({true, true, false}, AttachKind::kTracepoint), AttachKind::kTracepoint);
  EXPECT_EQ(choose_attach({true, true, false}, AttachKind::kKprobe), AttachKind::kNone);
  EXPECT_EQ(choose_attach({false, true, true}, AttachKind::kRawTracepoint), AttachKind::kNone);
}

}  // namespace
}  // namespace dynamix
