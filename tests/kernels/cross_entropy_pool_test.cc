// Cross-entropy's pool job when workers never join it: the job runs through run_dynamic(), so a
// worker that wakes after the caller's part skips it, and the caller must then take every block,
// including the first blocks the missing workers would have started with. A call from inside a
// job of the same pool is that case made certain (run_dynamic() there runs fn(0) alone), with the
// pool's thread count still 2 or 3: every row must come out with the 1-thread pool's bits.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/cross_entropy.h"
#include "trex/kernels/row_isa.h"

namespace trex::kernels {
namespace {

using namespace test_util;  // NOLINT: shared test helpers

TEST(CrossEntropyPool, TheCallerAloneDoesEveryRowWhenNoWorkerJoins) {
  struct Shape {
    int64_t rows, vocab;
  };
  // Fewer blocks than threads, as many, a few more (1 row a block at 20000 and 32768), many.
  const Shape shapes[] = {{1, 32768}, {2, 32768}, {4, 32768}, {9, 20000}, {37, 3001}};
  for (core::Isa isa : row_isas()) {
    ScopedRowIsa scoped(isa);
    for (const Shape& s : shapes) {
      const int64_t n = s.rows * s.vocab;
      auto x = random_vec<float>(n, 21, 2);
      std::vector<int32_t> tg(size_t(s.rows));
      for (int64_t r = 0; r < s.rows; ++r) tg[size_t(r)] = r % 5 == 4 ? -1 : int32_t((r * 7919) % s.vocab);
      core::ThreadPool one(1);
      std::vector<float> l1(size_t(s.rows), NAN);
      std::vector<float> d1(size_t(n), NAN);
      cross_entropy_forward_backward(x.data(), tg.data(), l1.data(), d1.data(), s.rows, s.vocab,
                                     0.25f, &one);
      for (int threads : {2, 3}) {
        const std::string tag = "isa " + std::to_string(int(isa)) + " [" + std::to_string(s.rows) +
                                ", " + std::to_string(s.vocab) + "] " + std::to_string(threads) +
                                " threads";
        core::ThreadPool pool(threads);
        std::vector<float> l(size_t(s.rows), NAN);
        std::vector<float> d(size_t(n), NAN);
        int calls = 0;
        pool.run([&](int t) {
          if (t != 0) return;
          ++calls;
          cross_entropy_forward_backward(x.data(), tg.data(), l.data(), d.data(), s.rows, s.vocab,
                                         0.25f, &pool);
        });
        ASSERT_EQ(calls, 1) << tag;
        EXPECT_TRUE(same_bytes(l, l1)) << tag << ": losses differ (a row left out?)";
        EXPECT_TRUE(same_bytes(d, d1)) << tag << ": gradients differ (a row left out?)";
      }
    }
  }
}

}  // namespace
}  // namespace trex::kernels
