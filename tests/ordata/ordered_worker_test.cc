// The corpus run's finisher: jobs run in submission order, all on one thread that lives as
// long as the worker; an exception reaches the job's future; queued jobs run before the
// destructor returns.
#include "trex/ordata/ordered_worker.h"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace trex::ordata {
namespace {

TEST(OrderedWorker, RunsJobsInOrderOnOneThread) {
  std::vector<int> order;
  std::set<std::thread::id> threads;
  std::vector<std::future<int>> results;
  {
    OrderedWorker w;
    for (int i = 0; i < 50; ++i)
      results.push_back(w.submit([&, i] {
        order.push_back(i);  // only the worker thread writes: jobs never overlap
        threads.insert(std::this_thread::get_id());
        return i * i;
      }));
    for (int i = 0; i < 50; ++i) EXPECT_EQ(results[size_t(i)].get(), i * i);
  }
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[size_t(i)], i);
  EXPECT_EQ(threads.size(), 1u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
}

TEST(OrderedWorker, AnExceptionReachesTheFutureAndLaterJobsStillRun) {
  OrderedWorker w;
  auto bad = w.submit([]() -> int { throw std::runtime_error("block failed"); });
  auto good = w.submit([] { return 7; });
  EXPECT_THROW(bad.get(), std::runtime_error);
  EXPECT_EQ(good.get(), 7);
}

TEST(OrderedWorker, TheDestructorRunsWhatIsQueued) {
  int done = 0;
  {
    OrderedWorker w;
    for (int i = 0; i < 10; ++i) w.submit([&] { ++done; });
  }
  EXPECT_EQ(done, 10);
}

}  // namespace
}  // namespace trex::ordata
