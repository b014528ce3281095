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

// run_dynamic(): fn(0) on the caller, fn(t) on each worker that starts before fn(0) returns,
// each index at most once a call; a worker that wakes after the call returned never runs its
// job. Many tiny calls back to back, with pools that poll (2 and 3 threads on this machine's
// CPUs, as a rule) and pools of more threads than CPUs (never poll: every worker sleeps and
// wakes late), some calls after a pause. Each call's job records, in memory that outlives the
// call, which indices ran; a record made after the call returned (a late worker running a
// finished job) shows as a count that differs from the one taken at the return. Under
// ThreadSanitizer (CI's build-tsan) the job's frame on the caller's stack is checked too.
TEST(ThreadPool, RunDynamicNeverRunsAFinishedJob) {
  const int many = int(allowed_cpus().size()) * 4 + 2;
  for (int n : {2, 3, many}) {
    ThreadPool pool(n);
    constexpr int kCalls = 3000;
    std::vector<std::atomic<uint64_t>> ran(kCalls);  // bit t: fn(t) ran during call i
    std::vector<std::atomic<int>> calls(kCalls);      // calls of call i's job
    std::vector<int> at_return(kCalls);
    std::vector<uint64_t> ran_at_return(kCalls);
    std::atomic<int> on_caller_thread{0};
    const std::thread::id caller = std::this_thread::get_id();
    for (int i = 0; i < kCalls; ++i) {
      if (i % 500 == 499) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      int local_work = 0;  // on this frame: a late worker writing it is a stack use after return
      pool.run_dynamic([&, i](int t) {
        if (t == 0 && std::this_thread::get_id() == caller) on_caller_thread++;
        ran[size_t(i)].fetch_or(uint64_t(1) << (t % 64));
        calls[size_t(i)]++;
        if (t == 0) local_work = 1;
      });
      at_return[size_t(i)] = calls[size_t(i)].load();
      ran_at_return[size_t(i)] = ran[size_t(i)].load();
      ASSERT_EQ(local_work, 1) << "threads " << n << " call " << i;
    }
    // Let any worker that would run a finished job do so before the counts are compared.
    pool.run([](int) {});
    for (int i = 0; i < kCalls; ++i) {
      EXPECT_EQ(calls[size_t(i)].load(), at_return[size_t(i)]) << "threads " << n << " call " << i;
      EXPECT_EQ(ran[size_t(i)].load(), ran_at_return[size_t(i)])
          << "threads " << n << " call " << i;
      EXPECT_TRUE(ran[size_t(i)].load() & 1) << "call " << i;
      EXPECT_LE(at_return[size_t(i)], n);
      if (n <= 64) {
        EXPECT_EQ(__builtin_popcountll(ran[size_t(i)].load()), at_return[size_t(i)]);
      }
    }
    EXPECT_EQ(on_caller_thread.load(), kCalls);
  }
}

// The job stays open while the caller's part runs: a caller that waits inside fn(0) until every
// worker has come sees each of them join, whether it polled or slept (no time limit: a worker
// that could not join would hang the test, which ctest's timeout ends).
TEST(ThreadPool, RunDynamicWorkersJoinWhileTheCallerWorks) {
  for (int n : {2, 3, int(allowed_cpus().size()) * 4 + 2}) {
    ThreadPool pool(n);
    for (int i = 0; i < 20; ++i) {
      if (i % 5 == 4) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // sleepers
      std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
      std::atomic<int> joined{0};
      pool.run_dynamic([&](int t) {
        seen[size_t(t)]++;
        if (t != 0) {
          joined++;
          return;
        }
        while (joined.load() < n - 1) std::this_thread::yield();
      });
      for (int t = 0; t < n; ++t)
        ASSERT_EQ(seen[size_t(t)].load(), 1) << "threads " << n << " t " << t;
    }
  }
}

// run() and run_dynamic() interleaved on one pool: run() still waits for every worker, and a
// worker that missed dynamic jobs takes the next run() job (the generation it wakes to).
TEST(ThreadPool, RunStillTakesEveryWorkerBetweenDynamicJobs) {
  const int many = int(allowed_cpus().size()) * 2 + 1;
  for (int n : {2, 3, many}) {
    ThreadPool pool(n);
    std::vector<int> cell(size_t(n), 0);
    for (int job = 0; job < 200; ++job) {
      pool.run_dynamic([](int) {});
      pool.run([&](int t) { cell[size_t(t)]++; });
      pool.parallel_for(0, 4, 1, [](int64_t, int64_t) {});
    }
    for (int t = 0; t < n; ++t) EXPECT_EQ(cell[size_t(t)], 200) << "threads " << n << " t " << t;
  }
}

// A throw in run_dynamic(), on the caller's part or a worker's, reaches the caller once every
// started call has returned; the pool keeps working. parallel_for over many tiny chunks, where
// either side may hit the failing one.
TEST(ThreadPool, RunDynamicExceptionsReachTheCaller) {
  for (int n : {2, 3, int(allowed_cpus().size()) * 4 + 2}) {
    ThreadPool pool(n);
    EXPECT_THROW(pool.run_dynamic([](int t) {
      if (t == 0) throw std::runtime_error("caller");
    }),
                 std::runtime_error);
    for (int i = 0; i < 300; ++i) {
      std::atomic<int> inside{0};
      EXPECT_THROW(pool.parallel_for(0, 64, 1,
                                     [&](int64_t lo, int64_t) {
                                       inside++;
                                       if (lo == i % 64) throw std::runtime_error("chunk");
                                       inside--;
                                     }),
                   std::runtime_error);
      // Only the failed chunk is left counted: every other started chunk finished before the
      // throw reached here.
      EXPECT_EQ(inside.load(), 1) << "threads " << n << " try " << i;
    }
    std::atomic<int64_t> total{0};
    pool.parallel_for(0, 1000, 7, [&](int64_t lo, int64_t hi) { total += hi - lo; });
    EXPECT_EQ(total, 1000);
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
