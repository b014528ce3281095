// A std::vector whose storage comes from aligned_alloc_bytes (arena.h): 64-byte aligned, and
// from 2 MiB on a mapping of its own on transparent huge pages where the system grants them.
//
// For the training step's activation buffers (model/), which were std::vector<float> on glibc's
// 4 KiB pages and 16-byte boundaries while the kernel benches time the same kernels on
// aligned_alloc_bytes buffers: at v4-micro's step shape (T 2048, n 4, d 512, fp32, 2 threads,
// loaded) mhc_post_backward ran 2.0-3.9 ms on std::vector buffers against 1.05-1.25 ms on these,
// mhc_post_forward 0.83-3.4 against 0.46-0.52 ms, rmsnorm_backward [2048, 2048] 1.37-4.0
// against 0.90-1.19 ms (issue 15's notes, session 17).
#pragma once

#include <cstddef>
#include <new>
#include <vector>

#include "trex/core/arena.h"

namespace trex::core {

template <class T>
struct AlignedAllocator {
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
