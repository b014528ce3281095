#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "trex/core/thread_pool.h"

namespace trex::core {
namespace {

constexpr int kThreadCounts[] = {1, 2, 3, 8};

TEST(ThreadPool, RunGivesEveryThreadIndexOnce) {
  for (int n : kThreadCounts) {
    ThreadPool pool(n);
    EXPECT_EQ(pool.num_threads(), n);
    std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
    std::mutex mu;
    std::set<std::thread::id> ids;
    for (int round = 0; round < 3; ++round)
      pool.run([&](int t) {
        seen[size_t(t)]++;
        std::lock_guard<std::mutex> lock(mu);
        ids.insert(std::this_thread::get_id());
      });
    for (int t = 0; t < n; ++t) EXPECT_EQ(seen[size_t(t)], 3) << "threads " << n;
    EXPECT_EQ(ids.size(), size_t(n));
  }
}

TEST(ThreadPool, ParallelForCoversEveryIndexExactlyOnce) {
  struct Case {
    int64_t begin, end, grain;
  };
  const Case cases[] = {{0, 1000, 1}, {0, 1000, 7}, {5, 1003, 64}, {0, 10, 100}, {-50, 50, 3}, {7, 7, 4}, {9, 3, 1}};
  for (int n : kThreadCounts) {
    ThreadPool pool(n);
    for (const Case& c : cases) {
      int64_t len = c.end > c.begin ? c.end - c.begin : 0;
      std::vector<std::atomic<int>> hits(static_cast<size_t>(len));
      std::atomic<int> bad_chunks{0};
      pool.parallel_for(c.begin, c.end, c.grain, [&](int64_t lo, int64_t hi) {
        if (hi <= lo || hi - lo > c.grain || (lo - c.begin) % c.grain != 0) bad_chunks++;
        for (int64_t i = lo; i < hi; ++i) hits[size_t(i - c.begin)]++;
      });
      EXPECT_EQ(bad_chunks, 0);
      for (int64_t i = 0; i < len; ++i)
        ASSERT_EQ(hits[size_t(i)], 1) << "threads " << n << " range [" << c.begin << ", " << c.end << ") grain "
                                      << c.grain << " index " << c.begin + i;
    }
  }
}

// Values of widely varying magnitude, so that the order of float additions shows in the bits.
std::vector<float> awkward_values(size_t n) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-20, 20);
  std::vector<float> v(n);
  for (float& x : v) x = std::ldexp(mant(rng), expo(rng));
  return v;
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(ThreadPool, ReductionIsBitwiseIdenticalForAnyThreadCount) {
  std::vector<float> v = awkward_values(1'000'003);
  auto sum = [&](ThreadPool& pool, int64_t chunk) {
    return parallel_reduce(
        pool, 0, int64_t(v.size()), chunk, 0.0f,
        [&](int64_t lo, int64_t hi) {
          float s = 0;
          for (int64_t i = lo; i < hi; ++i) s += v[size_t(i)];
          return s;
        },
        [](float a, float b) { return a + b; });
  };
  double exact = 0;
  for (float x : v) exact += x;
  for (int64_t chunk : {int64_t(1000), int64_t(4096), int64_t(65536)}) {
    ThreadPool one(1);
    float reference = sum(one, chunk);
    EXPECT_NEAR(reference, exact, 1e-3 * std::abs(exact) + 1e-2);
    for (int n : kThreadCounts) {
      ThreadPool pool(n);
      for (int rep = 0; rep < 3; ++rep)
        ASSERT_EQ(bits_of(sum(pool, chunk)), bits_of(reference)) << "threads " << n << " chunk " << chunk;
    }
  }
}

TEST(ThreadPool, ReductionOfAnEmptyRangeIsInit) {
  ThreadPool pool(3);
  int r = parallel_reduce(
      pool, 10, 10, 4, 17, [](int64_t, int64_t) { return 1; }, [](int a, int b) { return a + b; });
  EXPECT_EQ(r, 17);
  // A non-commutative combine shows the fixed order: chunks joined left to right.
  std::string s = parallel_reduce(
      pool, 0, 10, 3, std::string(">"), [](int64_t lo, int64_t) { return std::to_string(lo); },
      [](const std::string& a, const std::string& b) { return a + b; });
  EXPECT_EQ(s, ">0369");
}

TEST(ThreadPool, ExceptionsReachTheCallerAndThePoolSurvives) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_for(0, 100, 1,
                                 [](int64_t lo, int64_t) {
                                   if (lo == 37) throw std::runtime_error("chunk 37");
                                 }),
               std::runtime_error);
  EXPECT_THROW(pool.run([](int t) {
    if (t == 2) throw std::runtime_error("thread 2");
  }),
               std::runtime_error);
  std::atomic<int64_t> total{0};
  pool.parallel_for(0, 100, 10, [&](int64_t lo, int64_t hi) { total += hi - lo; });
  EXPECT_EQ(total, 100);
}

TEST(ThreadPool, NestedCallsRunSeriallyInsteadOfDeadlocking) {
  ThreadPool pool(2);
  std::vector<std::atomic<int>> hits(100);
  pool.parallel_for(0, 10, 1, [&](int64_t lo, int64_t) {
    pool.parallel_for(0, 10, 3, [&](int64_t a, int64_t b) {
      for (int64_t i = a; i < b; ++i) hits[size_t(lo * 10 + i)]++;
    });
  });
  for (auto& h : hits) EXPECT_EQ(h, 1);
}

// A job of pool P that runs a job of pool D is running both: on the thread that called D.run,
// P.running_here() holds inside D's job and a P.run() there goes serial instead of waiting for
// P's own job; D's workers run no job of P.
TEST(ThreadPool, RunningHereHoldsInsideAJobOfAnotherPool) {
  ThreadPool outer(2), inner(2);
  std::atomic<int> nested_calls{0}, checks{0};
  EXPECT_FALSE(outer.running_here());
  outer.run([&](int) {
    inner.run([&](int t) {
      EXPECT_TRUE(inner.running_here());
      if (t != 0) {
        EXPECT_FALSE(outer.running_here()) << "a worker of the inner pool runs no job of the outer";
        ++checks;
        return;
      }
      if (!outer.running_here()) {
        ADD_FAILURE() << "running_here() is false inside a job nested in the outer pool's";
        return;  // outer.run() from here would wait for the job it is part of
      }
      ++checks;
      outer.run([&](int) { ++nested_calls; });
    });
    EXPECT_TRUE(outer.running_here());
    EXPECT_FALSE(inner.running_here());
  });
  EXPECT_FALSE(outer.running_here());
  EXPECT_FALSE(inner.running_here());
  EXPECT_EQ(checks, 4);        // both outer threads ran the inner job on its two threads
  EXPECT_EQ(nested_calls, 4);  // each outer thread's nested run() called fn(0) and fn(1)
}

// Idle workers poll for a while (TREX_POOL_SPIN_US, default 200 µs) before they sleep on the
// condition variable, and the caller does the same for the end of a job. Back-to-back jobs are
// handed over to polling threads; jobs after a pause of 2 ms (beyond the default budget) to
// sleeping ones; a worker's side of a job that is slow makes the caller wait past its own poll.
// Every job must see every thread index once and every write of the previous job.
TEST(ThreadPool, JobsHandOffWhetherThreadsPollOrSleep) {
  for (int n : {2, 3}) {
    ThreadPool pool(n);
    std::vector<int64_t> cell(size_t(n), 0);
    for (int job = 0; job < 400; ++job) {
      if (job % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      pool.run([&](int t) {
        // The previous job's writes (by other threads) are visible here.
        for (int u = 0; u < n; ++u) ASSERT_EQ(cell[size_t(u)], job) << "threads " << n << " job " << job;
        if (t != 0 && job % 100 == 7) std::this_thread::sleep_for(std::chrono::milliseconds(3));
      });
      pool.run([&](int t) { cell[size_t(t)]++; });
    }
    for (int u = 0; u < n; ++u) EXPECT_EQ(cell[size_t(u)], 400) << "threads " << n;
  }
}

TEST(ThreadPool, PinnedPoolRunsAndDefaultPoolExists) {
  ThreadPool pinned(2, /*pin=*/true);
  std::atomic<int> n{0};
  pinned.run([&](int) { n++; });
  EXPECT_EQ(n, 2);
  EXPECT_GE(default_thread_pool().num_threads(), 1);
  EXPECT_FALSE(allowed_cpus().empty());
}

}  // namespace
}  // namespace trex::core
