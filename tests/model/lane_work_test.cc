// LaneWork: every item is taken exactly once, each lane's own segment first and in order, then
// the others' leftovers; with lanes racing, still exactly once.
#include "trex/model/lane_work.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace trex::model {
namespace {

TEST(LaneWork, SegmentsSplitTheItemsAsEvenlyAsTheyCan) {
  LaneWork w;
  w.reset(3, 11);
  EXPECT_EQ(w.begin(0), 0);
  EXPECT_EQ(w.begin(1), 3);
  EXPECT_EQ(w.begin(2), 7);
  EXPECT_EQ(w.begin(3), 11);
  w.reset(2, 1);  // fewer items than lanes: lane 0's segment is empty
  EXPECT_EQ(w.begin(1), 0);
  EXPECT_EQ(w.take_own(0), -1);
  EXPECT_EQ(w.take(0), 0);
  EXPECT_EQ(w.take(1), -1);
}

TEST(LaneWork, ALaneTakesItsOwnItemsInOrderThenTheOthersLeftovers) {
  LaneWork w;
  w.reset(2, 10);
  EXPECT_EQ(w.take_own(1), 5);
  EXPECT_EQ(w.take(1), 6);
  EXPECT_EQ(w.take(0), 0);
  std::vector<int> rest;
  for (int i; (i = w.take(1)) >= 0;) rest.push_back(i);
  // Lane 1 finishes its own segment, then takes lane 0's items from where lane 0 is.
  EXPECT_EQ(rest, (std::vector<int>{7, 8, 9, 1, 2, 3, 4}));
  EXPECT_EQ(w.take(0), -1);
  EXPECT_EQ(w.take_own(0), -1);
  // reset starts over, also with more lanes than before.
  w.reset(4, 8);
  std::vector<int> all;
  for (int t = 3; t >= 0; --t)
    for (int i; (i = w.take(t)) >= 0;) all.push_back(i);
  EXPECT_EQ(all, (std::vector<int>{6, 7, 0, 1, 2, 3, 4, 5}));
}

TEST(LaneWork, RacingLanesTakeEveryItemExactlyOnce) {
  for (int lanes : {2, 3, 5}) {
    for (int n : {0, 1, 7, 64, 1000}) {
      LaneWork w;
      w.reset(lanes, n);
      std::vector<std::atomic<int>> taken(static_cast<size_t>(n));
      std::vector<std::thread> threads;
      for (int t = 0; t < lanes; ++t)
        threads.emplace_back([&, t] {
          for (int i; (i = w.take(t)) >= 0;) taken[size_t(i)].fetch_add(1);
        });
      for (auto& th : threads) th.join();
      int wrong = 0;
      for (auto& k : taken) wrong += k.load() != 1;
      EXPECT_EQ(wrong, 0) << lanes << " lanes, " << n << " items";
    }
  }
}

}  // namespace
}  // namespace trex::model
