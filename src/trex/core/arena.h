// Aligned memory: a plain aligned allocation and a bump arena.
//
// Every allocation here starts on a 64-byte boundary (a cache line and an AVX-512 register),
// so kernels may use aligned loads on the start of any buffer they were given.
//
// Arena hands out pieces of large blocks by moving a pointer; nothing is freed one at a time.
// reset() makes all of it reusable at once: after a reset the arena keeps one block as big as
// everything it handed out before, so a loop that allocates the same buffers every step (the
// activations of a training step) touches the system allocator only in its first steps.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace trex::core {

inline constexpr size_t kDefaultAlignment = 64;

// Returns `bytes` of uninitialised memory aligned to `alignment` (a power of two, at least
// sizeof(void*)); a request for 0 bytes returns a valid, unique pointer. Throws std::bad_alloc
// when the system has no memory. Release with aligned_free. A buffer of 2 MiB or more starts on
// a 2 MiB boundary, is a mapping of its own of exactly its size (4 KiB pages rounded), and asks
// for transparent huge pages over the whole 2 MiB pages inside it (unless TREX_HUGEPAGES=0) (arena.cc says why and what
// that costs). Freed, such a buffer of at most 32 MiB is kept mapped (64 MiB in all, the oldest
// unmapped first) and handed out again to a request of the same length (4 KiB pages rounded), so
// a kernel's per-call temporary does not fault in fresh pages on every call; larger ones are
// unmapped at once. A length seen once is kept all the same: shapes that vary from call to call
// never reuse, and keep up to 64 MiB resident until evicted or released. A reused buffer holds
// its last user's bytes (0xFF, a NaN as any float, everywhere where
// reused_buffers_are_poisoned()), never the zeros of fresh pages.
// When the system refuses memory, the kept buffers are unmapped and the request tried once more.
void* aligned_alloc_bytes(size_t bytes, size_t alignment = kDefaultAlignment);
void aligned_free(void* p);

// Whether buffers of 2 MiB and more ask for transparent huge pages (MADV_HUGEPAGE): yes unless
// the environment has TREX_HUGEPAGES=0, which marks them MADV_NOHUGEPAGE instead (4 KiB pages
// whatever the system's THP mode), for A/Bs of the page size alone. Read once per process.
// Whether the system granted huge pages shows in /proc/self/smaps (AnonHugePages).
bool large_buffers_ask_for_huge_pages();

// Unmaps the freed large buffers kept for reuse (as malloc_trim does for glibc's heap); returns
// their bytes. Allocates nothing. Under AddressSanitizer nothing is kept: returns 0. A resident
// set size read without calling it first includes them (up to 64 MiB).
size_t release_kept_buffers();

// Whether aligned_alloc_bytes fills a reused buffer with 0xFF (NaN in any float) before handing it
// out, so that code relying on fresh pages being zero fails: in Debug builds and wherever the
// environment has TREX_ARENA_POISON=1 (ctest sets it for every test), not where it has
// TREX_ARENA_POISON=0, and never under ThreadSanitizer or AddressSanitizer. Read once per process.
bool reused_buffers_are_poisoned();

struct AlignedDeleter {
  void operator()(void* p) const { aligned_free(p); }
};

// An owning pointer to an aligned, uninitialised array of n trivially constructible T.
template <class T>
std::unique_ptr<T[], AlignedDeleter> aligned_array(size_t n) {
  return std::unique_ptr<T[], AlignedDeleter>(
      static_cast<T*>(aligned_alloc_bytes(n * sizeof(T), kDefaultAlignment)));
}

class Arena {
 public:
  // block_bytes: the size of each block taken from the system (larger requests get a block of
  // their own size).
  explicit Arena(size_t block_bytes = size_t(1) << 20);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // Uninitialised memory valid until the next reset() or the arena's destruction.
  // REQUIRES: alignment is a power of two no larger than 4096.
  void* allocate(size_t bytes, size_t alignment = kDefaultAlignment);

  template <class T>
  T* allocate_array(size_t n) {
    return static_cast<T*>(allocate(n * sizeof(T), alignof(T) > kDefaultAlignment ? alignof(T) : kDefaultAlignment));
  }

  // Invalidates every pointer handed out; keeps (at most) one block for reuse.
  void reset();

  // Bytes handed out since the last reset, alignment padding included.
  size_t bytes_used() const { return used_; }
  // Bytes held from the system.
  size_t bytes_reserved() const;
  size_t num_blocks() const { return blocks_.size(); }

 private:
  struct Block {
    char* data;
    size_t size;
  };
  void add_block(size_t min_bytes);

  size_t block_bytes_;
  std::vector<Block> blocks_;
  size_t current_ = 0;  // index into blocks_ of the block being filled
  size_t offset_ = 0;   // bytes used in blocks_[current_]
  size_t used_ = 0;
};

}  // namespace trex::core
