// The learning-rate schedule at its landmarks: warmup ramp, peak, cosine midpoint, floor.
#include "trex/train/schedule.h"

#include <gtest/gtest.h>

namespace trex::train {
namespace {

TEST(ScheduleTest, WarmupThenCosine) {
  Schedule s;
  s.peak_lr = 1e-3;
  s.min_lr = 1e-4;
  s.warmup = 10;
  s.total = 110;
  EXPECT_DOUBLE_EQ(s.lr(1), 1e-4);
  EXPECT_DOUBLE_EQ(s.lr(5), 5e-4);
  EXPECT_DOUBLE_EQ(s.lr(10), 1e-3);
  EXPECT_NEAR(s.lr(60), 5.5e-4, 1e-15);  // halfway through the decay: the mean of peak and floor
  EXPECT_NEAR(s.lr(110), 1e-4, 1e-15);
  EXPECT_DOUBLE_EQ(s.lr(500), 1e-4);
  for (int64_t t = 11; t < 110; ++t) EXPECT_LT(s.lr(t + 1), s.lr(t));
  s.kind = "constant";
  EXPECT_DOUBLE_EQ(s.lr(60), 1e-3);
  s.warmup = 0;
  EXPECT_DOUBLE_EQ(s.lr(1), 1e-3);
}

}  // namespace
}  // namespace trex::train
