#include <gtest/gtest.h>

#include "trex/util/error.h"

namespace trex {
namespace {

TEST(InputError, RendersOneLineWithLocation) {
  EXPECT_STREQ(InputError("model.lp", 12, "bad token").what(), "model.lp:12: bad token");
  EXPECT_STREQ(InputError("model.lp", 0, "empty").what(), "model.lp: empty");
  EXPECT_STREQ(InputError::field("--threads", "must be >= 1").what(), "--threads: must be >= 1");
  EXPECT_STREQ(InputError("plain").what(), "plain");
  InputError e("f.mps", 3, "x");
  EXPECT_EQ(e.file(), "f.mps");
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.detail(), "x");
}

}  // namespace
}  // namespace trex
