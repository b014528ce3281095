// Caching allocator: size classes, reuse of returned blocks (same address, no system call),
// alignment, statistics, empty_cache (and the arena's kept buffers it unmaps), the out-of-memory
// retry, CachedBuffer ownership, concurrent use.
#include "trex/core/caching_allocator.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <new>
#include <string>
#include <cstring>
#include <thread>
#include <vector>

#include "core/mapping_probe.h"
#include "trex/core/arena.h"

namespace trex::core {
namespace {

using test_util::kAsan;
using test_util::page_mapped;

long vm_size_kb() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmSize:") {
      long kb = -1;
      in >> kb;
      return kb;
    }
    in.ignore(1 << 12, '\n');
  }
  return -1;
}

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

// empty_cache() gives memory back to the system: its own blocks of 2-32 MiB, which aligned_free
// would keep mapped in the arena, and the buffers the arena keeps from other users too.
TEST(CachingAllocator, EmptyCacheUnmapsTheArenasKeptBuffers) {
  if (kAsan) GTEST_SKIP() << "ASan build: the arena keeps nothing";
  release_kept_buffers();
  const size_t mib = size_t(1) << 20;
  auto* other = static_cast<unsigned char*>(aligned_alloc_bytes(5 * mib, 64));
  other[0] = 1;
  aligned_free(other);
  ASSERT_TRUE(page_mapped(other)) << "the arena kept nothing: the test checks nothing";
  CachingAllocator a;
  auto* p = static_cast<unsigned char*>(a.allocate(3 * mib));
  p[0] = p[3 * mib - 1] = 1;
  a.deallocate(p);
  EXPECT_TRUE(page_mapped(p));  // cached
  a.empty_cache();
  EXPECT_FALSE(page_mapped(p));
  EXPECT_FALSE(page_mapped(p + 3 * mib - 1));
  EXPECT_FALSE(page_mapped(other));
  EXPECT_EQ(release_kept_buffers(), 0u);
}

// The death test's child (below). Exits 0 where all went as it should.
[[noreturn]] void out_of_memory_child() {
  release_kept_buffers();
  const size_t mib = size_t(1) << 20;
  CachingAllocator a;
  unsigned char* blocks[3];
  for (auto*& b : blocks) {
    b = static_cast<unsigned char*>(a.allocate(16 * mib));
    b[0] = 1;
  }
  for (auto* b : blocks) a.deallocate(b);
  const long vm_kb = vm_size_kb();
  if (vm_kb <= 0) std::_Exit(3);
  const rlimit limit{rlim_t(vm_kb) * 1024 + 8 * mib, rlim_t(vm_kb) * 1024 + 8 * mib};
  if (setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(4);
  unsigned char* p = nullptr;
  try {
    p = static_cast<unsigned char*>(a.allocate(20 * mib));
  } catch (const std::bad_alloc&) {
    std::_Exit(5);
  }
  p[20 * mib - 1] = 1;
  for (auto* b : blocks)  // unmapped, or unmapped and then mapped again as p
    if (page_mapped(b) && (b < p || b >= p + 20 * mib)) std::_Exit(6);
  if (a.stats().cached_bytes != 0) std::_Exit(7);
  std::_Exit(0);
}

// Out of memory, allocate drops the cache and the arena's kept buffers and tries again. In a
// forked child: three cached 16 MiB blocks, then an address-space limit 8 MiB above what is
// mapped; a 20 MiB block fits only once the cached blocks are unmapped, not merely moved to the
// arena's kept list. Exit codes name the failed step.
TEST(CachingAllocatorDeathTest, OutOfMemoryDropsTheCacheAndTheKeptBuffers) {
  if (kAsan) GTEST_SKIP() << "ASan build: its shadow memory needs the address space";
  const std::string style = GTEST_FLAG_GET(death_test_style);
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh child: no other test's threads or buffers
  EXPECT_EXIT(out_of_memory_child(), ::testing::ExitedWithCode(0), "");
  GTEST_FLAG_SET(death_test_style, style);
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
