#include "trex/core/aligned_vector.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <type_traits>

namespace trex::core {
namespace {

bool aligned(const void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

// Any two allocators are equal (a vector's move and swap stay O(1) and noexcept) and rebind to
// other element types (vector<vector<>> and node containers).
using Traits = std::allocator_traits<AlignedAllocator<float>>;
static_assert(Traits::is_always_equal::value);
static_assert(std::is_same_v<Traits::rebind_alloc<double>, AlignedAllocator<double>>);
static_assert(std::is_nothrow_move_assignable_v<aligned_vector<float>>);

// Storage from aligned_alloc_bytes: 64-byte aligned at sizes from 4 bytes to 2 MiB, 2 MiB aligned
// from 2 MiB on (the huge-page mappings), and a vector's semantics unchanged (values kept across
// growth).
TEST(AlignedVector, StorageIsAlignedAndGrowthKeepsValues) {
  for (size_t n : {size_t(1), size_t(3), size_t(1000), size_t(1) << 19}) {
    aligned_vector<float> v(n, 1.5f);
    EXPECT_TRUE(aligned(v.data(), 64)) << n;
    if (n * sizeof(float) >= (size_t(2) << 20)) EXPECT_TRUE(aligned(v.data(), size_t(2) << 20)) << n;
    v.resize(n + (size_t(1) << 20), 0.f);  // past 2 MiB: a new mapping
    EXPECT_TRUE(aligned(v.data(), size_t(2) << 20)) << n;
    EXPECT_EQ(v[0], 1.5f);
    EXPECT_EQ(v[n - 1], 1.5f);
    EXPECT_EQ(v[n], 0.f);
  }
  aligned_vector<float> a(5, 2.f), b = a;
  EXPECT_EQ(a, b);
  EXPECT_NE(a.data(), b.data());
  EXPECT_TRUE(a.get_allocator() == AlignedAllocator<double>());
}

}  // namespace
}  // namespace trex::core
