// See caching_allocator.h. The cache is a multimap from size class to blocks; a request takes
// any block of exactly its class (the most recently cached is not preferred: order is the
// multimap's, which is deterministic for a given sequence of calls).
#include "trex/core/caching_allocator.h"

#include <algorithm>
#include <new>

#include "trex/core/arena.h"

namespace trex::core {

size_t CachingAllocator::size_class(size_t bytes) {
  constexpr size_t kSmall = size_t(1) << 20, kSmallStep = 512;
  if (bytes <= kSmall) return std::max<size_t>(kSmallStep, (bytes + kSmallStep - 1) / kSmallStep * kSmallStep);
  size_t pow2 = kSmall;
  while (pow2 < bytes) pow2 <<= 1;
  size_t step = pow2 / 8;
  return (bytes + step - 1) / step * step;
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  release_cached_locked();  // to the arena, which may keep large ones for other users
}

void* CachingAllocator::allocate(size_t bytes) {
  const size_t cls = size_class(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  void* p = nullptr;
  auto it = free_.find(cls);
  if (it != free_.end()) {
    p = it->second;
    free_.erase(it);
    stats_.cached_bytes -= cls;
    ++stats_.hits;
  } else {
    try {
      p = aligned_alloc_bytes(cls);
    } catch (const std::bad_alloc&) {
      // The cache may hold what the system lacks. Its blocks of 2-32 MiB only move to the
      // arena's kept mappings on aligned_free, so those are unmapped too.
      release_cached_locked();
      release_kept_buffers();
      p = aligned_alloc_bytes(cls);
    }
    ++stats_.misses;
  }
  live_.emplace(p, cls);
  stats_.live_bytes += cls;
  stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, stats_.live_bytes);
  return p;
}

void CachingAllocator::deallocate(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  if (it == live_.end()) return;  // not ours or already returned: never free it twice
  const size_t cls = it->second;
  live_.erase(it);
  stats_.live_bytes -= cls;
  stats_.cached_bytes += cls;
  free_.emplace(cls, p);
}

void CachingAllocator::release_cached_locked() {
  for (auto& [cls, p] : free_) aligned_free(p);
  free_.clear();
  stats_.cached_bytes = 0;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  release_cached_locked();
  release_kept_buffers();  // else the freed blocks of 2-32 MiB would stay mapped in the arena
}

CachingAllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

CachingAllocator& default_caching_allocator() {
  static CachingAllocator alloc;
  return alloc;
}

}  // namespace trex::core
