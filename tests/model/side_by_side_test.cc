// side_by_side: every task runs once; products run side by side give the bits of the same
// products run one after another (threaded); with fewer tasks than threads they run in order on
// the calling thread.
#include "trex/model/side_by_side.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "trex/kernels/gemm.h"

namespace trex::model {
namespace {

using kernels::Trans;

TEST(SideBySide, EveryTaskRunsOnce) {
  const int n = 2 * core::default_thread_pool().num_threads() + 3;
  std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
  std::vector<std::function<void()>> tasks;
  for (int i = 0; i < n; ++i) tasks.push_back([&runs, i] { runs[size_t(i)]++; });
  side_by_side(tasks);
  for (int i = 0; i < n; ++i) EXPECT_EQ(runs[size_t(i)].load(), 1) << i;
}

TEST(SideBySide, FewerTasksThanThreadsRunInOrderOnTheCaller) {
  const int threads = core::default_thread_pool().num_threads();
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<int> order;
  std::vector<std::function<void()>> tasks;
  for (int i = 0; i + 1 < threads; ++i)
    tasks.push_back([&, i] {
      EXPECT_EQ(std::this_thread::get_id(), caller);
      order.push_back(i);
    });
  side_by_side(tasks);
  ASSERT_EQ(int(order.size()), threads - 1);
  for (int i = 0; i + 1 < threads; ++i) EXPECT_EQ(order[size_t(i)], i);
}

// The shared expert's backward pattern: dx = a W1, then dx += b W3 in one task, the two weight
// gradients (accumulating onto existing values) in two others; against the same calls in a row.
TEST(SideBySide, ProductsGiveTheSequentialBits) {
  const int64_t T = 300, d = 70, f = 45;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  auto rnd = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = u(rng);
    return v;
  };
  const auto a = rnd(T * f), b = rnd(T * f), x = rnd(T * d), w1 = rnd(f * d), w3 = rnd(f * d);
  const auto g1_0 = rnd(f * d), g3_0 = rnd(f * d);
  struct Out {
    std::vector<float> dx, g1, g3;
  };
  auto dx_chain = [&](Out& o) {
    kernels::sgemm(Trans::kNo, Trans::kNo, T, d, f, 1.f, a.data(), f, w1.data(), d, 0.f, o.dx.data(), d);
    kernels::sgemm(Trans::kNo, Trans::kNo, T, d, f, 1.f, b.data(), f, w3.data(), d, 1.f, o.dx.data(), d);
  };
  auto dw = [&](const std::vector<float>& dy, std::vector<float>& g) {
    kernels::sgemm(Trans::kYes, Trans::kNo, f, d, T, 1.f, dy.data(), f, x.data(), d, 1.f, g.data(), d);
  };
  Out seq{std::vector<float>(static_cast<size_t>(T * d)), g1_0, g3_0};
  Out sbs = seq;
  dx_chain(seq);
  dw(a, seq.g1);
  dw(b, seq.g3);
  // Enough tasks for any pool size, so the side-by-side path runs wherever there are 2+ threads.
  const int threads = core::default_thread_pool().num_threads();
  std::vector<Out> extra(static_cast<size_t>(threads), seq);
  std::vector<std::function<void()>> tasks = {[&] { dx_chain(sbs); }, [&] { dw(a, sbs.g1); },
                                              [&] { dw(b, sbs.g3); }};
  for (int i = 0; i < threads; ++i) {
    extra[size_t(i)].g1 = g1_0;
    tasks.push_back([&, i] { dw(a, extra[size_t(i)].g1); });
  }
  side_by_side(tasks);
  auto same = [](const std::vector<float>& p, const std::vector<float>& q) {
    return p.size() == q.size() && std::memcmp(p.data(), q.data(), p.size() * sizeof(float)) == 0;
  };
  EXPECT_TRUE(same(seq.dx, sbs.dx));
  EXPECT_TRUE(same(seq.g1, sbs.g1));
  EXPECT_TRUE(same(seq.g3, sbs.g3));
  for (int i = 0; i < threads; ++i) EXPECT_TRUE(same(seq.g1, extra[size_t(i)].g1)) << i;
}

}  // namespace
}  // namespace trex::model
