#include "trex/util/cpu_time.h"

#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <thread>

namespace trex {
namespace {

// Spins on this thread until `seconds` of its own CPU time have passed; returns a value so that
// the loop is not optimised away.
double burn(double seconds) {
  timespec t{};
  auto own = [&] {
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
  };
  const double until = own() + seconds;
  volatile double x = 0;
  while (own() < until)
    for (int i = 0; i < 1000; ++i) x = x + 1e-9;
  return x;
}

// It counts the work of every thread: 50 ms of CPU on this thread and 50 ms on another add at
// least 100 ms, while sleeping adds (almost) none.
TEST(ProcessCpuSeconds, CountsEveryThreadsWorkAndNotSleep) {
  const double t0 = process_cpu_seconds();
  EXPECT_GT(t0, 0.0);
  double other = 0;
  std::thread th([&] { other = burn(0.05); });
  const double mine = burn(0.05);
  th.join();
  const double t1 = process_cpu_seconds();
  EXPECT_GE(t1 - t0, 0.1) << mine + other;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_LT(process_cpu_seconds() - t1, 0.05);
}

}  // namespace
}  // namespace trex
