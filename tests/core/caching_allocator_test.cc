// Caching allocator: size classes, reuse of returned blocks (same address, no system call),
// alignment, statistics, empty_cache, CachedBuffer ownership, concurrent use.
#include "trex/core/caching_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace trex::core {
namespace {

TEST(CachingAllocator, SizeClasses) {
  EXPECT_EQ(CachingAllocator::size_class(0), 512u);
  EXPECT_EQ(CachingAllocator::size_class(1), 512u);
  EXPECT_EQ(CachingAllocator::size_class(513), 1024u);
  EXPECT_EQ(CachingAllocator::size_class(size_t(1) << 20), size_t(1) << 20);
  // Above 1 MiB: multiples of 1/8 of the next power of two.
  EXPECT_EQ(CachingAllocator::size_class((size_t(1) << 20) + 1), (size_t(1) << 20) + (size_t(1) << 18));
  EXPECT_EQ(CachingAllocator::size_class(size_t(100) << 20), size_t(112) << 20);
  for (size_t b : {size_t(3), size_t(4097), size_t(5) << 20, size_t(33) << 20})
    EXPECT_GE(CachingAllocator::size_class(b), b);
}

TEST(CachingAllocator, ReusesReturnedBlocksOfTheSameClass) {
  CachingAllocator a;
  void* p = a.allocate(10000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  std::memset(p, 1, 10000);
  a.deallocate(p);
  void* q = a.allocate(10100);  // same 512-byte class (10240)
  EXPECT_EQ(q, p);
  void* r = a.allocate(10000);  // p is in use: a new block
  EXPECT_NE(r, p);
  CachingAllocatorStats s = a.stats();
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.misses, 2);
  EXPECT_EQ(s.live_bytes, 2 * CachingAllocator::size_class(10000));
  a.deallocate(q);
  a.deallocate(r);
  a.deallocate(r);  // a second return is ignored, never a double free
  s = a.stats();
  EXPECT_EQ(s.live_bytes, 0u);
  EXPECT_EQ(s.cached_bytes, 2 * CachingAllocator::size_class(10000));
  EXPECT_EQ(s.peak_live_bytes, 2 * CachingAllocator::size_class(10000));
  a.empty_cache();
  EXPECT_EQ(a.stats().cached_bytes, 0u);
}

TEST(CachingAllocator, StepLoopHitsTheSystemOnlyOnce) {
  CachingAllocator a;
  const size_t sizes[] = {size_t(3) << 20, 4096, size_t(7) << 20, 100};
  for (int step = 0; step < 5; ++step) {
    std::vector<CachedBuffer<float>> bufs;
    for (size_t b : sizes) bufs.emplace_back(b / sizeof(float), a);
    for (auto& buf : bufs) buf[0] = 1.f;
  }
  CachingAllocatorStats s = a.stats();
  EXPECT_EQ(s.misses, 4);
  EXPECT_EQ(s.hits, 16);
  EXPECT_EQ(s.live_bytes, 0u);
}

TEST(CachingAllocator, CachedBufferMovesOwnership) {
  CachingAllocator a;
  CachedBuffer<double> x(100, a);
  double* p = x.data();
  CachedBuffer<double> y = std::move(x);
  EXPECT_EQ(x.data(), nullptr);
  EXPECT_EQ(y.data(), p);
  EXPECT_EQ(y.size(), 100u);
  y.reset();
  EXPECT_EQ(a.stats().live_bytes, 0u);
}

TEST(CachingAllocator, ConcurrentThreads) {
  CachingAllocator a;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&a, t] {
      for (int i = 0; i < 500; ++i) {
        size_t bytes = size_t(64 + 512 * ((i + t) % 7));
        char* p = static_cast<char*>(a.allocate(bytes));
        p[0] = char(t);
        p[bytes - 1] = char(i);
        a.deallocate(p);
      }
    });
  for (auto& th : threads) th.join();
  CachingAllocatorStats s = a.stats();
  EXPECT_EQ(s.live_bytes, 0u);
  EXPECT_EQ(s.hits + s.misses, 2000);
  EXPECT_LE(s.misses, 4 * 7);
}

}  // namespace
}  // namespace trex::core
