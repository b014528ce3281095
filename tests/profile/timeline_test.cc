// Interval unions on the timeline: overlaps count once, only the part inside the windows counts.
#include <gtest/gtest.h>

#include "trex/profile/timeline.h"

namespace trex::profile {
namespace {

TEST(Timeline, UnionCountsOverlapsOnce) {
  EXPECT_DOUBLE_EQ(union_us({{0, 10}, {5, 15}, {20, 25}, {30, 30}}), 20);
  EXPECT_DOUBLE_EQ(union_us({}), 0);
}

TEST(Timeline, CoveredOnlyInsideWindows) {
  // Kernels [0,10) [5,15) [20,25) [40,50); windows [2,8) [12,22) [45,100).
  EXPECT_DOUBLE_EQ(covered_us({{0, 10}, {5, 15}, {20, 25}, {40, 50}}, {{2, 8}, {12, 22}, {45, 100}}),
                   6 + 3 + 2 + 5);
  EXPECT_DOUBLE_EQ(covered_us({{0, 10}}, {}), 0);
}

}  // namespace
}  // namespace trex::profile
