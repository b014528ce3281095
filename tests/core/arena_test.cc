#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/mapping_probe.h"
#include "trex/core/arena.h"

namespace trex::core {
namespace {

#if defined(__SANITIZE_THREAD__)
constexpr bool kTsan = true;
#else
constexpr bool kTsan = false;
#endif

bool aligned(const void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

using test_util::kAsan;
using test_util::page_mapped;

bool thp_present() { return access("/sys/kernel/mm/transparent_hugepage", F_OK) == 0; }

// One mapping of /proc/self/smaps: its range, name, VmFlags and sizes in kB.
struct Vma {
  uintptr_t lo = 0, hi = 0;
  std::string name, flags;
  long rss_kb = 0, anon_huge_kb = 0;
  bool has_flag(const std::string& f) const { return (" " + flags + " ").find(" " + f + " ") != std::string::npos; }
};

std::vector<Vma> read_smaps() {
  std::vector<Vma> vmas;
  std::ifstream in("/proc/self/smaps");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string first;
    ls >> first;
    if (first.find('-') != std::string::npos && first.back() != ':') {  // "lo-hi perms off dev inode name"
      Vma v;
      size_t dash = first.find('-');
      v.lo = std::stoull(first.substr(0, dash), nullptr, 16);
      v.hi = std::stoull(first.substr(dash + 1), nullptr, 16);
      std::string perms, off, dev, inode;
      ls >> perms >> off >> dev >> inode;
      std::getline(ls >> std::ws, v.name);
      vmas.push_back(v);
    } else if (!vmas.empty()) {
      if (first == "Rss:") ls >> vmas.back().rss_kb;
      else if (first == "AnonHugePages:") ls >> vmas.back().anon_huge_kb;
      else if (first == "VmFlags:") std::getline(ls >> std::ws, vmas.back().flags);
    }
  }
  return vmas;
}

// A "Key: N kB" line of /proc/self/status, or -1.
long status_kb(const std::string& want) {
  std::ifstream in("/proc/self/status");
  std::string key;
  long kb = -1;
  while (in >> key) {
    if (key == want) {
      in >> kb;
      break;
    }
    in.ignore(1 << 12, '\n');
  }
  return kb;
}

long rss_anon_kb() { return status_kb("RssAnon:"); }

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

// The huge-page hint covers the whole 2 MiB pages inside the buffer and nothing past its end:
// the mapping holding its first byte carries `hg` (MADV_HUGEPAGE) in smaps' VmFlags, no mapping
// with `hg` reaches past the last whole 2 MiB page, and no huge page backs more than those.
TEST(Arena, LargeBuffersAskForHugePagesOnlyInsideThemselves) {
  if (!thp_present()) GTEST_SKIP() << "no /sys/kernel/mm/transparent_hugepage: kernel without THP";
  const size_t huge = size_t(2) << 20;
  for (size_t bytes : {huge, huge + 100, huge + (size_t(256) << 10), 5 * huge + 3}) {
    auto* p = static_cast<unsigned char*>(aligned_alloc_bytes(bytes, 64));
    std::memset(p, 0x5a, bytes);
    const uintptr_t lo = reinterpret_cast<uintptr_t>(p), whole_end = lo + (bytes & ~(huge - 1));
    bool found = false;
    long anon_huge_kb = 0;
    for (const Vma& v : read_smaps()) {
      if (v.hi <= lo || v.lo >= lo + bytes) continue;
      if (v.lo <= lo && lo < v.hi) {
        found = true;
        EXPECT_TRUE(v.has_flag("hg")) << bytes << ": VmFlags " << v.flags;
      }
      if (v.has_flag("hg")) {
        EXPECT_LE(v.hi, whole_end) << bytes << ": hg past the last whole 2 MiB page";
      }
      anon_huge_kb += v.anon_huge_kb;
    }
    EXPECT_TRUE(found) << bytes;
    EXPECT_LE(anon_huge_kb, long((whole_end - lo) >> 10)) << bytes;
    aligned_free(p);
  }
}

// A buffer takes its own size, not a multiple of 2 MiB: 16 touched buffers of 2.5 MiB add at
// most 2.5 MiB each (plus 15% for page tables and the test's own), where rounding up to 2 MiB
// multiples took 4 MiB each wherever huge pages were granted.
TEST(Arena, LargeBuffersTakeTheirExactSize) {
  if (kAsan) GTEST_SKIP() << "ASan build: its shadow memory and redzones add resident memory of their own";
  release_kept_buffers();  // buffers kept from earlier tests would be handed out untouched-new
  const size_t bytes = (size_t(5) << 20) / 2;
  const long before = rss_anon_kb();
  ASSERT_GT(before, 0) << "no RssAnon in /proc/self/status";
  std::vector<void*> buffers;
  for (int i = 0; i < 16; ++i) {
    buffers.push_back(aligned_alloc_bytes(bytes, 64));
    std::memset(buffers.back(), 0x11, bytes);
  }
  const long grown = rss_anon_kb() - before;
  for (void* p : buffers) aligned_free(p);
  release_kept_buffers();
  EXPECT_GE(grown, long(16 * bytes >> 10) * 9 / 10);  // every byte was touched
  EXPECT_LE(grown, long(16 * bytes >> 10) * 115 / 100);
}

// glibc's heap never gets the huge-page flag, even after a large free raised glibc's mmap
// threshold so that its own large blocks come from the heap.
TEST(Arena, LargeBuffersAreNeverOnTheHeap) {
  if (kAsan) GTEST_SKIP() << "ASan build: large buffers come from ASan's allocator";
  const size_t huge = size_t(2) << 20;
  void* volatile raise = std::malloc(size_t(24) << 20);  // volatile: the pair is not elided
  std::free(raise);  // glibc's mmap threshold rises to 24 MiB
  std::vector<void*> buffers;
  for (int i = 0; i < 8; ++i) buffers.push_back(aligned_alloc_bytes(huge + huge / 4, 64));
  void* small = std::malloc(huge + huge / 4);  // glibc's own, on the heap after the raise
  std::memset(small, 2, huge + huge / 4);
  const std::vector<Vma> vmas = read_smaps();
  auto on_heap = [&](const void* p) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    for (const Vma& v : vmas)
      if (v.name == "[heap]" && v.lo <= a && a < v.hi) return true;
    return false;
  };
  EXPECT_TRUE(on_heap(small)) << "glibc's threshold did not rise: the test checks nothing";
  for (const Vma& v : vmas) EXPECT_FALSE(v.name == "[heap]" && v.has_flag("hg"));
  for (void* p : buffers) EXPECT_FALSE(on_heap(p));
  for (void* p : buffers) aligned_free(p);
  std::free(small);
  for (const Vma& v : read_smaps()) EXPECT_FALSE(v.name == "[heap]" && v.has_flag("hg"));
}

// A freed large buffer stays mapped and is handed out again to a request of the same length
// (a kernel's per-call temporary faults its pages in once); a request of another length gets
// another mapping; release_kept_buffers unmaps it, first page to last. Buffers over 32 MiB are
// unmapped on free.
TEST(Arena, FreedLargeBuffersAreKeptForTheSameSizeThenReleased) {
  if (kAsan) GTEST_SKIP() << "ASan build: nothing is kept (large buffers come from ASan's allocator)";
  release_kept_buffers();
  const size_t huge = size_t(2) << 20, bytes = 2 * huge + 3, length = 2 * huge + 4096;
  auto* p = static_cast<unsigned char*>(aligned_alloc_bytes(bytes, 64));
  std::memset(p, 0x77, bytes);
  EXPECT_TRUE(page_mapped(p));
  EXPECT_TRUE(page_mapped(p + length - 4096));
  aligned_free(p);
  EXPECT_TRUE(page_mapped(p)) << "not kept";
  void* other = aligned_alloc_bytes(bytes + 4096, 64);  // one page longer: not p's mapping
  EXPECT_NE(other, p);
  void* again = aligned_alloc_bytes(bytes, 4096);
  EXPECT_EQ(again, p);
  // The same pages, not fresh ones: the last user's bytes, or the poison over all (as under ctest).
  const unsigned char expect = reused_buffers_are_poisoned() ? 0xFF : 0x77;
  EXPECT_EQ(p[bytes - 1], expect);
  EXPECT_EQ(p[0], expect);
  aligned_free(again);
  aligned_free(other);
  EXPECT_EQ(release_kept_buffers(), length + (length + 4096));
  EXPECT_FALSE(page_mapped(p));
  EXPECT_FALSE(page_mapped(p + length - 4096));
  EXPECT_EQ(release_kept_buffers(), 0u);

  // Exactly 32 MiB is kept; 4 KiB more is unmapped on free.
  const size_t edge = size_t(32) << 20;
  auto* kept = static_cast<unsigned char*>(aligned_alloc_bytes(edge, 64));
  kept[0] = kept[edge - 1] = 1;
  aligned_free(kept);
  EXPECT_TRUE(page_mapped(kept));
  EXPECT_TRUE(page_mapped(kept + edge - 1));
  EXPECT_EQ(release_kept_buffers(), edge);
  EXPECT_FALSE(page_mapped(kept + edge - 1));

  const size_t over = edge + 4096;
  auto* big = static_cast<unsigned char*>(aligned_alloc_bytes(over, 64));
  big[0] = big[over - 1] = 1;
  EXPECT_TRUE(page_mapped(big + over - 1));
  aligned_free(big);
  EXPECT_FALSE(page_mapped(big));
  EXPECT_FALSE(page_mapped(big + over - 1));
}

// At most 64 MiB stay kept: freeing 40 buffers of 2-2.2 MiB each (84 MiB) unmaps the first
// freed and keeps the last.
TEST(Arena, KeptLargeBuffersAreBounded) {
  if (kAsan) GTEST_SKIP() << "ASan build: nothing is kept";
  release_kept_buffers();
  const size_t huge = size_t(2) << 20, limit = size_t(64) << 20;
  std::vector<std::pair<unsigned char*, size_t>> buffers;
  for (size_t i = 0; i < 40; ++i) {
    const size_t bytes = huge + i * 4096;  // 40 lengths: no request reuses another's mapping
    buffers.push_back({static_cast<unsigned char*>(aligned_alloc_bytes(bytes, 64)), bytes});
    buffers.back().first[0] = 1;
  }
  for (auto& [p, bytes] : buffers) aligned_free(p);
  size_t mapped = 0;
  for (auto& [p, bytes] : buffers)
    if (page_mapped(p)) mapped += bytes;
  EXPECT_LE(mapped, limit);
  EXPECT_GT(mapped, limit - 2 * (huge + 40 * 4096));
  EXPECT_FALSE(page_mapped(buffers.front().first));
  EXPECT_TRUE(page_mapped(buffers.back().first));
  const size_t released = release_kept_buffers();
  EXPECT_LE(released, limit);
  EXPECT_GE(released, mapped);
  for (auto& [p, bytes] : buffers) EXPECT_FALSE(page_mapped(p));
}

// Threads allocating and freeing large buffers at once (the side table and the kept list under
// one mutex): no range is handed to two threads at once. Every buffer handed out goes into a
// table of live ranges under the test's own mutex, where it must not overlap one still live
// (erased before its free), and its first and last page carry the thread's tag, read back after
// a yield through a volatile pointer, so a Release build checks it too (plain reads of what was
// just stored compile to no loads at all). The sizes run from 2 to 8 MiB, 65 MiB over the 13,
// so the oldest kept mappings are evicted (unmapped) while other threads allocate. TSan runs
// this as well (.ci/sanitizers).
TEST(Arena, ConcurrentLargeAllocAndFree) {
  const size_t huge = size_t(2) << 20, page = 4096;
  std::mutex mu;
  std::map<uintptr_t, uintptr_t> live;  // start -> end of every buffer a thread holds
  std::vector<int> overlaps(4, 0), bad(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      const auto tag = static_cast<unsigned char>(t + 1);
      for (int i = 0; i < 400; ++i) {
        const size_t bytes = huge + size_t((i * 7 + t) % 13) * (huge / 4);  // 2-8 MiB
        auto* p = static_cast<unsigned char*>(aligned_alloc_bytes(bytes, 64));
        const uintptr_t lo = reinterpret_cast<uintptr_t>(p), hi = lo + bytes;
        {
          std::lock_guard<std::mutex> lock(mu);
          auto next = live.lower_bound(lo);
          const bool clash = (next != live.end() && next->first < hi) ||
                             (next != live.begin() && std::prev(next)->second > lo);
          if (clash) ++overlaps[size_t(t)];
          else live.emplace(lo, hi);
        }
        std::memset(p, tag, page);
        std::memset(p + bytes - page, tag, page);
        std::this_thread::yield();
        const volatile unsigned char* v = p;
        for (size_t k = 0; k < page; k += 64)
          if (v[k] != tag || v[bytes - page + k] != tag) ++bad[size_t(t)];
        if (v[bytes - 1] != tag) ++bad[size_t(t)];
        {
          std::lock_guard<std::mutex> lock(mu);
          live.erase(lo);
        }
        aligned_free(p);
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(overlaps[size_t(t)], 0) << "thread " << t << " got a range another thread held";
    EXPECT_EQ(bad[size_t(t)], 0) << "thread " << t << "'s bytes changed under it";
  }
  release_kept_buffers();
}

// The death test's child (below). Exits 0 where all went as it should.
[[noreturn]] void mmap_failure_child() {
  release_kept_buffers();
  const size_t mib = size_t(1) << 20;
  unsigned char* kept[3];
  for (auto*& k : kept) {
    k = static_cast<unsigned char*>(aligned_alloc_bytes(16 * mib, 64));
    k[0] = 1;
  }
  for (auto* k : kept) aligned_free(k);
  if (!page_mapped(kept[0])) std::_Exit(3);
  const long vm_kb = status_kb("VmSize:");
  if (vm_kb <= 0) std::_Exit(4);
  const rlimit limit{rlim_t(vm_kb) * 1024 + 8 * mib, rlim_t(vm_kb) * 1024 + 8 * mib};
  if (setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(5);
  unsigned char* p = nullptr;
  try {
    p = static_cast<unsigned char*>(aligned_alloc_bytes(20 * mib, 64));
  } catch (const std::bad_alloc&) {
    std::_Exit(6);
  }
  p[20 * mib - 1] = 1;
  for (auto* k : kept)  // unmapped, or unmapped and then mapped again as p
    if (page_mapped(k) && (k < p || k >= p + 20 * mib)) std::_Exit(7);
  try {
    aligned_alloc_bytes(40 * mib, 64);
    std::_Exit(8);
  } catch (const std::bad_alloc&) {
  }
  std::_Exit(0);
}

// Out of address space, a request first unmaps the kept buffers and tries again. In a forked
// child: 48 MiB kept, then an address-space limit 8 MiB above what is mapped; a 20 MiB request
// (a 22 MiB mmap) fits only once the kept ones are gone. A 40 MiB request after that fails,
// which shows the limit bites. Exit codes name the failed step.
TEST(ArenaDeathTest, AFailingMmapReleasesTheKeptBuffersAndRetries) {
  if (kAsan) GTEST_SKIP() << "ASan build: nothing is kept, and its shadow memory needs the address space";
  const std::string style = GTEST_FLAG_GET(death_test_style);
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh child: no other test's threads or buffers
  EXPECT_EXIT(mmap_failure_child(), ::testing::ExitedWithCode(0), "");
  GTEST_FLAG_SET(death_test_style, style);
}

// In a fresh process with TREX_ARENA_POISON=<value>: a large buffer zeroed, freed and handed out
// again holds 0xFF in every byte where poisoned, else still its zeros. Exit codes name the step.
// The poison reads as NaN in fp32, bf16 (a float's high half) and fp64, and -1 as an integer, so
// a sum into a reused buffer wrongly assumed zero turns NaN (0xA5 read as -2.9e-16: as zero).
void poison_child(const char* value, bool poisoned) {
  setenv("TREX_ARENA_POISON", value, 1);
  if (reused_buffers_are_poisoned() != poisoned) std::_Exit(3);
  release_kept_buffers();
  const size_t bytes = (size_t(2) << 20) + 3;
  auto* p = static_cast<unsigned char*>(aligned_alloc_bytes(bytes, 64));
  std::memset(p, 0, bytes);
  aligned_free(p);
  auto* again = static_cast<unsigned char*>(aligned_alloc_bytes(bytes, 64));
  if (again != p) std::_Exit(4);
  const unsigned char want = poisoned ? 0xFF : 0;
  for (size_t i = 0; i < bytes; ++i)
    if (again[i] != want) std::_Exit(5);
  float f;
  double d;
  int32_t n;
  std::memcpy(&f, again, sizeof f);
  std::memcpy(&d, again + 8, sizeof d);
  std::memcpy(&n, again + 16, sizeof n);
  if (poisoned && !(std::isnan(f) && std::isnan(d) && n == -1)) std::_Exit(6);
  aligned_free(again);
  std::_Exit(0);
}

// ctest runs every test with TREX_ARENA_POISON=1, so the Release stage sees the poison that a
// Debug build applies (code relying on fresh zeros after a reuse fails there); 0 turns it off.
TEST(ArenaDeathTest, TheEnvironmentTurnsThePoisonOfReusedBuffersOnAndOff) {
  if (kAsan) GTEST_SKIP() << "ASan build: nothing is kept, so nothing is reused";
  if (kTsan) GTEST_SKIP() << "TSan build: never poisons (the fill made the concurrent test 6x slower)";
  const std::string style = GTEST_FLAG_GET(death_test_style);
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh child: the setting is read once
  EXPECT_EXIT(poison_child("1", true), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(poison_child("0", false), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(poison_child("yes", true), ::testing::ExitedWithCode(0), "");
  GTEST_FLAG_SET(death_test_style, style);
}

// In a fresh process with TREX_HUGEPAGES=<value>: a large buffer's whole 2 MiB pages carry
// `hg` (MADV_HUGEPAGE) in smaps' VmFlags where huge pages are asked for, else `nh`
// (MADV_NOHUGEPAGE: 4 KiB pages even where the system's THP mode is "always"), and never both;
// none of its memory is on a huge page when they are not asked for. Exit codes name the step.
void huge_pages_child(const char* value, bool huge) {
  setenv("TREX_HUGEPAGES", value, 1);
  if (large_buffers_ask_for_huge_pages() != huge) std::_Exit(3);
  const size_t bytes = (size_t(4) << 20) + 100;
  auto* p = static_cast<unsigned char*>(aligned_alloc_bytes(bytes, 64));
  std::memset(p, 0x5a, bytes);
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
  bool found = false;
  for (const Vma& v : read_smaps()) {
    if (v.hi <= lo || v.lo > lo) continue;  // the mapping holding the first byte
    found = true;
    if (!v.has_flag(huge ? "hg" : "nh")) std::_Exit(4);
    if (v.has_flag(huge ? "nh" : "hg")) std::_Exit(5);
    if (!huge && v.anon_huge_kb != 0) std::_Exit(6);
  }
  if (!found) std::_Exit(7);
  aligned_free(p);
  std::_Exit(0);
}

// TREX_HUGEPAGES=0 keeps large buffers on 4 KiB pages (for A/Bs of the page size alone); any
// other value, or none, asks for huge pages.
TEST(ArenaDeathTest, TheEnvironmentTurnsHugePagesOnAndOff) {
  if (!thp_present()) GTEST_SKIP() << "no /sys/kernel/mm/transparent_hugepage: kernel without THP";
  const std::string style = GTEST_FLAG_GET(death_test_style);
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh child: the setting is read once
  EXPECT_EXIT(huge_pages_child("0", false), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(huge_pages_child("1", true), ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(huge_pages_child("yes", true), ::testing::ExitedWithCode(0), "");
  GTEST_FLAG_SET(death_test_style, style);
}

// The exact size is what ASan sees: a write just past a large buffer is a reported overflow
// (rounding the size up to 2 MiB multiples hid up to 2 MiB past every such buffer from it).
TEST(ArenaDeathTest, AsanSeesAWritePastALargeBuffer) {
  if (!kAsan) GTEST_SKIP() << "not an AddressSanitizer build (the ASan stage runs this)";
  const size_t bytes = (size_t(2) << 20) + 100;
  auto* p = static_cast<volatile char*>(aligned_alloc_bytes(bytes, 64));
  EXPECT_DEATH(p[bytes + 64] = 1, "heap-buffer-overflow");
  aligned_free(const_cast<char*>(p));
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
