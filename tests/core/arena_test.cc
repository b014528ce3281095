#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "trex/core/arena.h"

namespace trex::core {
namespace {

bool aligned(const void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

TEST(Arena, AlignedAllocIsAligned) {
  for (size_t bytes : {0, 1, 63, 64, 65, 1000, 1 << 20}) {
    for (size_t align : {size_t(64), size_t(4096)}) {
      void* p = aligned_alloc_bytes(bytes, align);
      ASSERT_NE(p, nullptr);
      EXPECT_TRUE(aligned(p, align)) << bytes << " " << align;
      std::memset(p, 0xab, bytes);
      aligned_free(p);
    }
  }
  EXPECT_THROW(aligned_alloc_bytes(64, 48), std::invalid_argument);
  auto a = aligned_array<float>(37);
  EXPECT_TRUE(aligned(a.get(), 64));
}

// 2 MiB and more: a 2 MiB boundary (so that transparent huge pages can back the whole buffer),
// whatever alignment was asked for; every byte writable.
TEST(Arena, LargeAllocationsStartOnAHugePageBoundary) {
  const size_t huge = size_t(2) << 20;
  for (size_t bytes : {huge, huge + 1, 5 * huge + 3}) {
    for (size_t align : {size_t(64), size_t(4096)}) {
      void* p = aligned_alloc_bytes(bytes, align);
      EXPECT_TRUE(aligned(p, huge)) << bytes << " " << align;
      std::memset(p, 0xcd, bytes);
      aligned_free(p);
    }
  }
  Arena arena(4096);
  EXPECT_TRUE(aligned(arena.allocate(3 * huge), huge));  // a block of its own
}

TEST(Arena, AllocationsAreAlignedAndDisjoint) {
  Arena arena(4096);
  std::vector<std::pair<unsigned char*, size_t>> pieces;
  for (size_t i = 0; i < 200; ++i) {
    size_t bytes = 1 + (i * 37) % 700;
    auto* p = static_cast<unsigned char*>(arena.allocate(bytes));
    ASSERT_TRUE(aligned(p, 64)) << i;
    std::memset(p, int(i & 0xff), bytes);
    pieces.push_back({p, bytes});
  }
  for (size_t i = 0; i < pieces.size(); ++i)
    for (size_t k = 0; k < pieces[i].second; ++k) ASSERT_EQ(pieces[i].first[k], i & 0xff) << i;
  EXPECT_GT(arena.num_blocks(), 1u);
  EXPECT_GE(arena.bytes_reserved(), arena.bytes_used());
}

TEST(Arena, LargerAlignmentsAndLargeRequests) {
  Arena arena(1024);
  EXPECT_TRUE(aligned(arena.allocate(10, 256), 256));
  EXPECT_TRUE(aligned(arena.allocate(10, 4096), 4096));
  void* big = arena.allocate(100000);  // larger than a block: a block of its own
  EXPECT_TRUE(aligned(big, 64));
  std::memset(big, 1, 100000);
  float* f = arena.allocate_array<float>(5);
  EXPECT_TRUE(aligned(f, 64));
  EXPECT_THROW(arena.allocate(8, 48), std::invalid_argument);
  EXPECT_THROW(arena.allocate(8, 8192), std::invalid_argument);
}

TEST(Arena, ResetReusesOneBlock) {
  Arena arena(4096);
  auto round = [&] {
    for (int i = 0; i < 50; ++i) arena.allocate(1000);
  };
  round();
  size_t reserved = arena.bytes_reserved();
  EXPECT_GT(arena.num_blocks(), 1u);
  arena.reset();
  EXPECT_EQ(arena.bytes_used(), 0u);
  EXPECT_EQ(arena.num_blocks(), 1u);
  EXPECT_GE(arena.bytes_reserved(), reserved);
  // The same work again fits in the coalesced block: nothing new from the system.
  round();
  EXPECT_EQ(arena.num_blocks(), 1u);
  EXPECT_EQ(arena.bytes_reserved(), reserved);
  void* first_before = nullptr;
  arena.reset();
  first_before = arena.allocate(64);
  arena.reset();
  EXPECT_EQ(arena.allocate(64), first_before);
}

}  // namespace
}  // namespace trex::core
