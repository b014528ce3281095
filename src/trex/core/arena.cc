#include "trex/core/arena.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace trex::core {

// Buffers of 2 MiB and more start on a 2 MiB boundary and ask for transparent huge pages
// (MADV_HUGEPAGE) over the whole 2 MiB pages inside them. Where the system's THP mode is
// "madvise" (Debian's default, and this VM's) every other buffer is mapped in 4 KiB pages, and a
// TLB miss walks the guest's and the host's page tables; the hardware probe's STREAM arrays
// (hw_probe.cc) come from here too, so the kernels and the probed triad run on the same pages.
// Measured in session 15 (loaded, load 16-17, issue 15's notes): two-thread triad over 3 x 128
// MiB, best of 20 in 5 runs, 35.3-48.9 GB/s on 4 KiB pages against 32.6-52.6 GB/s on huge pages
// (equal medians in 2 of the 5 runs); bench/kernel_triad_bench, same code on either pages, 6
// alternating rounds in each of two runs: the other streaming kernels 1.02-1.67x faster, adamw
// 0.99x, mhc.head_bwd fp32 0.84-0.86x slower in both runs, and in one run kv_compress backward
// 0.82-0.88x and mhc.head_bwd bf16 0.91x slower (1.10-1.20x and 1.05x in the other).
// Session 26 (a Zen 4 VM, load 10-19; bench/results/pages_s26): 97% of the v4-micro step's
// anonymous memory on huge pages (the rest is glibc's heap); against TREX_HUGEPAGES=0, the
// two-thread triad in one process 1.31-1.64x faster on huge pages (20 alternating rounds,
// same-code control 1.01-1.14), the step's CPU time within 1-2%. (kernel_triad_bench's cases
// read 1.18x and 1.52x slower on 4 KiB pages, but that run's same-arm control drifted 1.90x.)
//
// The hint has costs. Where no huge page is free the range stays on 4 KiB pages, but with
// /sys/kernel/mm/transparent_hugepage/defrag = "madvise" (this VM's) the first touch of each 2
// MiB page in such a range first runs direct compaction and reclaim, so on a host with
// fragmented memory a first touch can stall for milliseconds.
//
// Each such buffer is its own anonymous mapping of exactly its size (rounded to 4 KiB pages):
// nothing past the end is backed by a huge page (rounding the size up to 2 MiB took 1.3-1.6x the
// memory for 2-3 MiB buffers), and the flag never lands on memory glibc's heap hands out again
// after a free. A side table keeps each mapping's length for aligned_free.
//
// A freed mapping of at most 32 MiB is kept, touched pages and all, and handed out again to the
// next request of the same length; at most 64 MiB are kept, the oldest unmapped first. Kernels
// that take a temporary buffer per call (rmsnorm's dw partial sums, mhc's packed dphi sums above
// 4 MiB) would otherwise fault in fresh pages on every call: a 2.5 MiB allocate + touch + free
// took 2144 us against glibc's 25 us (review rrows2, loaded). The 32 MiB bound is glibc's mmap
// threshold's ceiling (a larger malloc is always a mapping of its own, unmapped on free); the
// 64 MiB bound is twice that, as glibc's trim threshold is twice its mmap threshold (that
// threshold limits only the free top of a glibc heap, not what glibc keeps in all: the figure is
// a like size, not glibc's bound). Reuse needs the exact length, so shapes that vary from call to
// call (serve's prompt lengths, ragged batches) rarely reuse, and what they keep stays resident
// until it is evicted or released. release_kept_buffers() unmaps them all; so does a failing mmap
// or posix_memalign here (then it is tried once more), and CachingAllocator::empty_cache() and its out-of-memory retry
// call it. In a Debug build (NDEBUG not defined), and in any build run with TREX_ARENA_POISON=1
// (every ctest test: CMakeLists.txt), a reused buffer is filled with 0xFF first, so that code
// which relies on fresh pages being zero shows up there (poison_reused below).
//
// Under AddressSanitizer they come from posix_memalign at the 2 MiB boundary with their exact
// size instead, so ASan keeps its redzones, quarantine and leak checks on them (its allocator
// maps large blocks on their own, so the hint still lands on the block only), and nothing is kept.
constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kPage = 4096;  // x86-64's base page; mmap lengths round to it
// Requests of this many bytes or more are mappings of their own (aligned_alloc_bytes), so no
// mapping is shorter: that bounds how many fit in the kept bytes.
constexpr size_t kMapThreshold = kHugePage;
constexpr size_t kKeepLargest = size_t(32) << 20;  // freed mappings up to this length are kept
constexpr size_t kKeepBytes = size_t(64) << 20;    // ... up to this many bytes in all
// The most mappings kept at once, counting the one just freed before the oldest are evicted;
// also the most evicted by one free, and what release_kept_buffers takes out in one go.
constexpr size_t kMaxKept = kKeepBytes / kMapThreshold + 1;
static_assert(kMapThreshold % kPage == 0 && kMapThreshold >= kPage,
              "a mapping's length (bytes rounded up to pages) is at least kMapThreshold");
static_assert(kKeepLargest <= kKeepBytes && kMaxKept <= 64, "the kept list fits on the stack");
// A reused buffer's bytes where poisoned. 0xFF is a NaN in fp32, bf16, fp16 and fp64 and -1 as a
// signed integer, so a sum into a buffer assumed zero turns NaN and fails any tolerance check;
// 0xA5 (used before) read as -2.9e-16 in fp32 and bf16, zero to every tolerance.
constexpr unsigned char kReusePoison = 0xFF;

#if defined(__SANITIZE_ADDRESS__)
#define TREX_ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TREX_ARENA_ASAN 1
#endif
#endif

namespace {

// Whole 2 MiB pages only: a huge page is never backed past the last byte asked for.
size_t hinted_bytes(size_t bytes) { return bytes & ~(kHugePage - 1); }

// TREX_HUGEPAGES=0: the same mappings, marked MADV_NOHUGEPAGE instead, so that they stay on 4 KiB
// pages whatever the system's THP mode ("always" included): one switch for A/Bs of the page size
// alone (alignment, exact lengths and reuse unchanged). Any other value, or none: huge pages.
bool want_huge_pages() {
  static const bool on = [] {
    const char* e = std::getenv("TREX_HUGEPAGES");
    return e == nullptr || std::strcmp(e, "0") != 0;
  }();
  return on;
}

void advise_huge(void* p, size_t bytes) {
  const size_t whole = hinted_bytes(bytes);
  // A hint: where it fails (a kernel without THP) the buffer is on 4 KiB pages, and works.
  if (whole != 0) madvise(p, whole, want_huge_pages() ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
}

#ifndef TREX_ARENA_ASAN
// Whether a reused buffer is filled with kReusePoison before it is handed out: in a Debug
// build, and wherever TREX_ARENA_POISON=1 (ctest sets it for every test, so the Release stage
// CI runs covers it too; any value but 0 does); TREX_ARENA_POISON=0 turns it off. Never under ThreadSanitizer, whose
// stage runs the concurrent test, where the instrumented fill made it 6x slower. Read once.
bool poison_reused() {
#if defined(__SANITIZE_THREAD__)
  return false;
#else
  static const bool on = [] {
    const char* e = std::getenv("TREX_ARENA_POISON");
    if (e != nullptr && *e != '\0') return std::strcmp(e, "0") != 0;  // any other value: on
#ifdef NDEBUG
    return false;
#else
    return true;
#endif
  }();
  return on;
#endif
}

// One mapping: its length and the bytes from its start that carry the huge-page hint.
struct Mapping {
  size_t length = 0, hinted = 0;
};

struct Mappings {
  Mappings() { kept.reserve(kMaxKept); }  // so keeping never allocates
  std::mutex mu;
  std::unordered_map<uintptr_t, Mapping> live;  // start -> mapping, for every buffer handed out
  struct Kept {
    uintptr_t start;
    Mapping m;
  };
  std::vector<Kept> kept;  // freed and kept, oldest first
  size_t kept_bytes = 0;
};

Mappings& mappings() {
  static Mappings* m = new Mappings;  // never destroyed: buffers may be freed during exit
  return *m;
}

// A kept mapping of this length and hint starting on the alignment (the newest such), else 0.
uintptr_t reuse_kept(Mappings& m, const Mapping& want, size_t alignment) {
  std::lock_guard<std::mutex> lock(m.mu);
  for (size_t i = m.kept.size(); i-- > 0;) {
    const Mappings::Kept k = m.kept[i];
    if (k.m.length != want.length || k.m.hinted != want.hinted || k.start % alignment != 0) continue;
    m.live.emplace(k.start, k.m);  // may throw bad_alloc: then the mapping stays kept
    m.kept.erase(m.kept.begin() + std::ptrdiff_t(i));
    m.kept_bytes -= k.m.length;
    return k.start;
  }
  return 0;
}

// Takes every kept mapping out of the list under the lock (into a fixed array: nothing is
// allocated, as memory may be short just then) and unmaps them outside it; returns their bytes.
size_t release_kept(Mappings& m) {
  Mappings::Kept all[kMaxKept];
  size_t n = 0;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    for (const Mappings::Kept& k : m.kept) all[n++] = k;  // at most kMaxKept - 1 between frees
    m.kept.clear();  // keeps the reserved capacity
    m.kept_bytes = 0;
  }
  size_t bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    munmap(reinterpret_cast<void*>(all[i].start), all[i].m.length);
    bytes += all[i].m.length;
  }
  return bytes;
}

void* map_huge(size_t bytes, size_t alignment) {
  const size_t length = (bytes + kPage - 1) & ~(kPage - 1);
  if (length < bytes || length + alignment < length) throw std::bad_alloc();
  const Mapping want{length, hinted_bytes(bytes)};
  Mappings& m = mappings();
  if (length <= kKeepLargest)
    if (uintptr_t start = reuse_kept(m, want, alignment)) {
      void* p = reinterpret_cast<void*>(start);
      if (poison_reused()) std::memset(p, kReusePoison, length);
      return p;
    }
  const size_t over = length + alignment;  // room to trim the start to the boundary
  void* raw = mmap(nullptr, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  // Out of memory (or address space): the kept mappings may be what is missing. Tried again
  // even where this thread released nothing: another thread failing at the same time may have
  // emptied the list a moment before, and a second failed mmap costs nothing.
  if (raw == MAP_FAILED) {
    release_kept(m);
    raw = mmap(nullptr, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  }
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t start = (base + alignment - 1) & ~(uintptr_t(alignment) - 1);
  const size_t head = start - base, tail = over - head - length;
  if (head != 0) munmap(raw, head);
  if (tail != 0) munmap(reinterpret_cast<void*>(start + length), tail);
  try {
    std::lock_guard<std::mutex> lock(m.mu);
    m.live.emplace(start, want);
  } catch (...) {
    munmap(reinterpret_cast<void*>(start), length);
    throw;
  }
  void* p = reinterpret_cast<void*>(start);
  advise_huge(p, bytes);
  return p;
}

// Where map_huge returned p: keeps the mapping or unmaps it, and returns true. Else false (p is
// from the malloc heap).
bool unmap_or_keep(void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (a % kHugePage != 0) return false;  // every mapping starts on a 2 MiB boundary
  Mappings& m = mappings();
  Mappings::Kept evicted[kMaxKept];
  size_t n_evicted = 0;
  Mapping freed;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    auto it = m.live.find(a);
    if (it == m.live.end()) return false;
    freed = it->second;
    m.live.erase(it);
    if (freed.length <= kKeepLargest) {
      m.kept.push_back({a, freed});  // within the reserved capacity: at most kMaxKept
      m.kept_bytes += freed.length;
      size_t drop = 0;
      while (m.kept_bytes > kKeepBytes) {
        evicted[n_evicted++] = m.kept[drop];
        m.kept_bytes -= m.kept[drop++].m.length;
      }
      m.kept.erase(m.kept.begin(), m.kept.begin() + std::ptrdiff_t(drop));
      freed.length = 0;  // kept
    }
  }
  // Unmapped outside the lock; erased from the tables first, so no other thread can be handed
  // the address while it is still mapped here.
  if (freed.length != 0) munmap(p, freed.length);
  for (size_t i = 0; i < n_evicted; ++i)
    munmap(reinterpret_cast<void*>(evicted[i].start), evicted[i].m.length);
  return true;
}
#endif

}  // namespace

void* aligned_alloc_bytes(size_t bytes, size_t alignment) {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0)
    throw std::invalid_argument("aligned_alloc_bytes: alignment must be a power of two");
  const bool huge = bytes >= kMapThreshold;
  if (huge && alignment < kHugePage) alignment = kHugePage;
#ifndef TREX_ARENA_ASAN
  if (huge) return map_huge(bytes, alignment);
#endif
  // posix_memalign has no size-multiple rule: the exact size, so ASan sees the exact end.
  void* p = nullptr;
  int rc = posix_memalign(&p, alignment, bytes == 0 ? 1 : bytes);
#ifndef TREX_ARENA_ASAN
  if (rc != 0) {  // as in map_huge: tried again whatever this thread released
    release_kept(mappings());
    rc = posix_memalign(&p, alignment, bytes == 0 ? 1 : bytes);
  }
#endif
  if (rc != 0) throw std::bad_alloc();
  if (huge) advise_huge(p, bytes);
  return p;
}

void aligned_free(void* p) {
  if (p == nullptr) return;
#ifndef TREX_ARENA_ASAN
  if (unmap_or_keep(p)) return;
#endif
  std::free(p);
}

bool reused_buffers_are_poisoned() {
#ifdef TREX_ARENA_ASAN
  return false;
#else
  return poison_reused();
#endif
}

bool large_buffers_ask_for_huge_pages() { return want_huge_pages(); }

size_t release_kept_buffers() {
#ifdef TREX_ARENA_ASAN
  return 0;
#else
  return release_kept(mappings());
#endif
}

Arena::Arena(size_t block_bytes) : block_bytes_(block_bytes == 0 ? 4096 : block_bytes) {}

Arena::~Arena() {
  for (Block& b : blocks_) aligned_free(b.data);
}

size_t Arena::bytes_reserved() const {
  size_t total = 0;
  for (const Block& b : blocks_) total += b.size;
  return total;
}

void Arena::add_block(size_t min_bytes) {
  size_t size = min_bytes > block_bytes_ ? min_bytes : block_bytes_;
  char* data = static_cast<char*>(aligned_alloc_bytes(size, 4096));
  blocks_.insert(blocks_.begin() + std::ptrdiff_t(blocks_.empty() ? 0 : current_ + 1), Block{data, size});
  current_ = blocks_.size() == 1 ? 0 : current_ + 1;
  offset_ = 0;
}

void* Arena::allocate(size_t bytes, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > 4096)
    throw std::invalid_argument("Arena::allocate: alignment must be a power of two <= 4096");
  if (bytes == 0) bytes = 1;  // distinct pointers for distinct requests
  // Blocks start 4096-aligned, so aligning the offset aligns the address.
  while (!blocks_.empty()) {
    size_t start = (offset_ + alignment - 1) & ~(alignment - 1);
    if (start + bytes <= blocks_[current_].size) {
      used_ += start + bytes - offset_;
      offset_ = start + bytes;
      return blocks_[current_].data + start;
    }
    if (current_ + 1 >= blocks_.size()) break;
    // A block kept from before a reset, or one added for a large request: fill it next.
    ++current_;
    offset_ = 0;
  }
  add_block(bytes);
  used_ += bytes;
  offset_ = bytes;
  return blocks_[current_].data;
}

void Arena::reset() {
  if (blocks_.size() > 1) {
    // Coalesce into one block as large as all blocks held, so the next round fits in it.
    size_t want = bytes_reserved();
    for (Block& b : blocks_) aligned_free(b.data);
    blocks_.clear();
    current_ = 0;
    add_block(want);
  }
  current_ = 0;
  offset_ = 0;
  used_ = 0;
}

}  // namespace trex::core
