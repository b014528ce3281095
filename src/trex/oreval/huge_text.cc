// The warm interpreter's own code on 2 MB pages (trex_zygote_huge_text; python/trex_eval_zygote.py
// calls it once, after its warm-ups, before its first fork; issue 19).
//
// Why: on this project's machine (a PVM guest) a process's first touch of a page through an
// entry of its own page tables costs microseconds of hypervisor time, and a program's child
// touches about 470 pages of python3's text alone (session 17, docs/eval.md). Measured in
// session 20 (bench/results/oreval_pool_s20.md): a forked child reading 64 MB its parent wrote
// costs 5.3-7.6 us per 4 kB page first, 0.04 us where the parent's memory is on 2 MB pages: the
// cost is per page-table entry, and a 2 MB page is one entry. A child's
// writes split such a page again (then every 4 kB entry costs its touch), so only memory that
// no child writes gains: the interpreter's machine code and the read-only data beside it.
//
// How: the interpreter's machine code (the file PyEval_EvalCode is in: Debian's python3 itself,
// or libpython for an interpreter built with a shared library) is a file mapping, which the kernel
// maps with a 2 MB entry only where a 2 MB-aligned range of the mapping itself is cached as one
// 2 MB folio: Debian's python3.11 maps its code at 0x41f000-0x6d2000, which holds no such range. Each 2 MB-aligned, 2 MB-long part
// of that file's read-only mappings around the code that holds some of the code is copied into
// anonymous memory that the kernel backs with one 2 MB page (MADV_HUGEPAGE, else MADV_COLLAPSE),
// made read-and-execute, and moved over the original with mremap, which keeps the 2 MB page: the
// same bytes at the same addresses, so nothing running notices. fork then copies one entry for
// it, and each child maps it whole. What changes for a program: none of its sandbox layers; the
// part's read-only data (ELF headers, .rodata) becomes executable as well as readable (never
// writable), and debuggers and perf see the part as anonymous memory, not as the file.
//
// Only the calling thread may run while it works (the zygote has no other): another thread
// executing the part between the copy and the move is not an issue (same bytes), but one
// changing the mappings could be. Anything unexpected leaves a part as it was (the file mapping):
// a part is replaced only once its copy is known to sit on one 2 MB page.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "trex/oreval/proc_maps.h"

namespace trex::oreval::huge_text {
namespace {

constexpr uintptr_t kHuge = uintptr_t(2) << 20;
constexpr int kCollapse = 25;  // MADV_COLLAPSE (Linux 6.1)

using Mapping = ProcMapping;

// PAGEMAP_SCAN (Linux 6.7) of /proc/PID/pagemap, written out so that older kernel headers still
// build: the ranges of [start, end) whose pages have every category of category_mask.
struct PageRegion {
  uint64_t start, end, categories;
};
struct PmScanArg {
  uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted, category_mask,
      category_anyof_mask, return_mask;
};
constexpr unsigned long kPagemapScan = _IOWR('f', 16, PmScanArg);
constexpr uint64_t kPageIsPresent = 1 << 3, kPageIsHuge = 1 << 6;

// Whether [at, at + 2 MB) is present as one 2 MB page, by PAGEMAP_SCAN: 1 or 0, -1 where the
// kernel (before 6.7) or /proc cannot answer. It reads the range's own page-table entry; the
// smaps answer (below) walks every mapping of the process, 1.5-3 ms here each time, and
// huge_text asked it once or twice per part: most of its ~4.7 ms of the interpreter's start
// (session 30).
int one_huge_page_by_scan(uintptr_t at) {
  int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  PageRegion found[2] = {};
  PmScanArg arg{};
  arg.size = sizeof arg;
  arg.start = at;
  arg.end = at + kHuge;
  arg.vec = uint64_t(uintptr_t(found));
  arg.vec_len = 2;
  arg.category_mask = kPageIsPresent | kPageIsHuge;
  arg.return_mask = kPageIsPresent | kPageIsHuge;
  long n = ioctl(fd, kPagemapScan, &arg);
  close(fd);
  if (n < 0) return -1;
  return n == 1 && found[0].start == at && found[0].end == at + kHuge ? 1 : 0;
}

// Whether the 2 MB at `at` (a mapping of its own: replace's copy) sit on one 2 MB page: by
// PAGEMAP_SCAN, else by the mapping's AnonHugePages in smaps.
bool on_one_huge_page(uintptr_t at) {
  int scanned = one_huge_page_by_scan(at);
  if (scanned >= 0) return scanned == 1;
  for (const Mapping& m : read_proc_mappings("/proc/self/smaps"))
    if (m.start <= at && at < m.end) return m.anon_huge_pages_kb >= long(kHuge >> 10);
  return false;
}

// Replaces [part, part + 2 MB) with a copy on one 2 MB page; false (the part untouched) where the
// copy could not be made so.
bool replace(uintptr_t part) {
  void* raw = mmap(nullptr, 2 * kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return false;
  uintptr_t base = uintptr_t(raw), copy = (base + kHuge - 1) & ~(kHuge - 1);
  // Only the aligned 2 MB stay: the rest goes now, so that the copy is a mapping of its own.
  if (copy > base) munmap(raw, copy - base);
  if (base + 2 * kHuge > copy + kHuge) munmap(reinterpret_cast<void*>(copy + kHuge), base + 2 * kHuge - copy - kHuge);
  void* c = reinterpret_cast<void*>(copy);
  madvise(c, kHuge, MADV_HUGEPAGE);
  memcpy(c, reinterpret_cast<const void*>(part), kHuge);
  bool huge = on_one_huge_page(copy);
  if (!huge && madvise(c, kHuge, kCollapse) == 0) huge = on_one_huge_page(copy);
  if (!huge || mprotect(c, kHuge, PROT_READ | PROT_EXEC) != 0) {
    munmap(c, kHuge);
    return false;
  }
  void* moved = mremap(c, kHuge, kHuge, MREMAP_MAYMOVE | MREMAP_FIXED, reinterpret_cast<void*>(part));
  if (moved == MAP_FAILED) {  // the kernel leaves both as they were
    munmap(c, kHuge);
    return false;
  }
  return true;
}

// The mapping that holds the interpreter's machine code: the one PyEval_EvalCode is in (python3
// itself for Debian's, libpython for an interpreter built with a shared library), else the
// executable's own code.
size_t code_mapping(const std::vector<Mapping>& maps) {
  void* symbol = dlsym(RTLD_DEFAULT, "PyEval_EvalCode");
  uintptr_t at = uintptr_t(symbol);
  for (size_t i = 0; at && i < maps.size(); ++i)
    if (maps[i].start <= at && at < maps[i].end && maps[i].perms == "r-xp" && !maps[i].path.empty()) return i;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return maps.size();
  exe[n] = 0;
  for (size_t i = 0; i < maps.size(); ++i)
    if (maps[i].path == exe && maps[i].perms == "r-xp") return i;
  return maps.size();
}

}  // namespace
}  // namespace trex::oreval::huge_text

// Moves the 2 MB parts of the interpreter's code onto 2 MB pages (the file's comment). Returns how
// many parts now sit on one; 0 where none could (no THP, a kernel without it, parts too small),
// -1 where the mappings could not be read. The code runs the same either way.
extern "C" __attribute__((visibility("default"))) int trex_zygote_huge_text() {
  using namespace trex::oreval::huge_text;
  std::vector<Mapping> maps = trex::oreval::read_proc_mappings("/proc/self/maps");
  if (maps.empty()) return -1;
  size_t text = code_mapping(maps);
  if (text == maps.size()) return 0;
  // The code, and the read-only mappings of the same file that adjoin it.
  size_t lo = text, hi = text;
  // Readable and not writable, of the same file: a PROT_NONE gap the loader leaves between the
  // segments of a library aligned beyond 4 kB joins nothing (the copy would fault on it).
  auto joins = [&](size_t i) {
    return maps[i].path == maps[text].path && maps[i].perms[0] == 'r' &&
           maps[i].perms.find('w') == std::string::npos;
  };
  while (lo > 0 && maps[lo - 1].end == maps[lo].start && joins(lo - 1)) --lo;
  while (hi + 1 < maps.size() && maps[hi].end == maps[hi + 1].start && joins(hi + 1)) ++hi;
  uintptr_t from = maps[lo].start, to = maps[hi].end;
  uintptr_t code_from = maps[text].start, code_to = maps[text].end;
  int replaced = 0;
  for (uintptr_t part = (from + kHuge - 1) & ~(kHuge - 1); part + kHuge <= to; part += kHuge)
    if (part < code_to && part + kHuge > code_from && replace(part)) ++replaced;
  return replaced;
}
