// A caching allocator for activations: freed blocks are kept, keyed by their rounded size, and
// handed out again to the next request of the same size class, so a training step that allocates
// the same activation shapes every step touches the system allocator (and takes first-touch page
// faults) only in its first step. This is what an eager framework's caching allocator buys it,
// and the fused kernels' benchmarks use it so that both sides pay the same page-fault cost.
//
// Size classes: requests up to 1 MiB round up to a multiple of 512 bytes; larger ones to a
// multiple of 1/8 of the next power of two (at most 12.5% slack), so that slightly different
// activation sizes (a ragged last batch, a MoE group) share blocks. A block is reused only for
// its own size class. Every block is 64-byte aligned (core::aligned_alloc_bytes, which takes
// exactly the class's size: blocks of 2 MiB and more are mappings of their own rounded only to
// 4 KiB pages, huge pages only over their whole 2 MiB pages, so the slack stays 12.5%).
//
// Thread-safe (one mutex; allocation is not on any kernel's inner loop). Blocks still cached are
// released by empty_cache() or the destructor; blocks still in use at destruction are a caller
// bug and are reported by live_bytes() beforehand (they are not freed, never double-freed).
// Released blocks go to core::aligned_free, which keeps those of 2-32 MiB mapped for reuse
// (arena.h); the destructor leaves them there, empty_cache() and the out-of-memory retry unmap
// them (core::release_kept_buffers, process-wide).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace trex::core {

struct CachingAllocatorStats {
  int64_t hits = 0;            // requests served from the cache
  int64_t misses = 0;          // requests that went to the system
  size_t live_bytes = 0;       // handed out and not yet returned (rounded sizes)
  size_t cached_bytes = 0;     // returned and kept for reuse
  size_t peak_live_bytes = 0;  // high-water mark of live_bytes
};

class CachingAllocator {
 public:
  CachingAllocator() = default;
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Uninitialised, 64-byte aligned memory of at least `bytes` (0 allowed: a unique pointer).
  // Throws std::bad_alloc when the system has no memory even after dropping the cache and
  // unmapping the arena's kept buffers.
  void* allocate(size_t bytes);
  // Returns p (from allocate of this allocator) to the cache. nullptr is ignored.
  // REQUIRES: p came from this allocator and was not returned before.
  void deallocate(void* p);
  // Releases every cached block to the system, and unmaps every buffer the arena keeps for reuse
  // (core::release_kept_buffers: all of the process's, not only this allocator's).
  void empty_cache();

  CachingAllocatorStats stats() const;

  // The rounded size a request of `bytes` is served with.
  static size_t size_class(size_t bytes);

 private:
  void release_cached_locked();

  mutable std::mutex mu_;
  std::multimap<size_t, void*> free_;        // size class -> cached block
  std::unordered_map<void*, size_t> live_;   // block -> size class
  CachingAllocatorStats stats_;
};

// The process-wide allocator for activations.
CachingAllocator& default_caching_allocator();

// An owning, typed buffer from a caching allocator: n uninitialised T, returned on destruction.
template <class T>
class CachedBuffer {
 public:
  CachedBuffer() = default;
  CachedBuffer(size_t n, CachingAllocator& alloc = default_caching_allocator())
      : alloc_(&alloc), data_(static_cast<T*>(alloc.allocate(n * sizeof(T)))), size_(n) {}
  ~CachedBuffer() { reset(); }
  CachedBuffer(CachedBuffer&& o) noexcept { *this = std::move(o); }
  CachedBuffer& operator=(CachedBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      alloc_ = o.alloc_;
      data_ = o.data_;
      size_ = o.size_;
      o.data_ = nullptr;
      o.size_ = 0;
    }
    return *this;
  }
  CachedBuffer(const CachedBuffer&) = delete;
  CachedBuffer& operator=(const CachedBuffer&) = delete;

  T* data() const { return data_; }
  size_t size() const { return size_; }
  T& operator[](size_t i) const { return data_[i]; }
  void reset() {
    if (data_) alloc_->deallocate(data_);
    data_ = nullptr;
    size_ = 0;
  }

 private:
  CachingAllocator* alloc_ = nullptr;
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace trex::core
