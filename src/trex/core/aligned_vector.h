// A std::vector whose storage comes from aligned_alloc_bytes (arena.h): 64-byte aligned, and
// from 2 MiB on a mapping of its own on transparent huge pages where the system grants them.
//
// For the activation buffers of the training step and of prefill (model/), which were
// std::vector<float>: glibc puts a large block 16 bytes past a page boundary, so every 64-byte
// vector load and store of the row kernels split two cache lines. At v4-micro's step shape
// (T 2048, n 4, d 512, fp32, 2 threads, loaded; medians of 6 rounds, full ranges) the kernels ran
// on std::vector buffers against these: mhc_post_backward 2.23 (2.01-3.91) against 1.16
// (1.05-2.58) ms, mhc_post_forward 0.86 (0.83-3.44) against 0.48 (0.46-0.70) ms, rmsnorm_backward
// [2048, 2048] 1.69 (1.37-4.00) against 1.07 (0.90-1.30) ms. Alignment is most of it: with the
// two separated (12 rounds, load 9-10; issue 15's notes, session 18), 64-byte aligned buffers on
// 4 KiB pages ran those kernels 1.66x, 1.42x and 1.36x faster than std::vector, huge pages at
// glibc's 16-byte offset 1.07x, 0.99x, 0.98x, both together 2.09x, 1.61x, 1.32x (10 rounds at
// load 11 agreed, but rmsnorm_backward 1.35x on huge pages alone, mhc_post_forward 1.13x aligned).
#pragma once

#include <cstddef>
#include <new>
#include <vector>

#include "trex/core/arena.h"

namespace trex::core {

template <class T>
struct AlignedAllocator {
  // Storage starts on a 64-byte boundary (2 MiB from 2 MiB on): enough for T's own alignment.
  static_assert(alignof(T) <= kDefaultAlignment, "AlignedAllocator: T is aligned beyond 64 bytes");
  using value_type = T;
  AlignedAllocator() noexcept = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    if (n > size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(aligned_alloc_bytes(n * sizeof(T), kDefaultAlignment));
  }
  void deallocate(T* p, size_t) noexcept { aligned_free(p); }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const noexcept { return true; }
};

template <class T>
using aligned_vector = std::vector<T, AlignedAllocator<T>>;

}  // namespace trex::core
