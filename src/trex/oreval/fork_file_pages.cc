// The warm interpreter's read-only file mappings handed to each child by the fork itself
// (trex_zygote_fork_file_pages; python/trex_eval_zygote.py calls it once, after its code moved
// onto 2 MB pages (huge_text.cc), before its first fork; issue 19).
//
// Why: fork copies the page-table entries of a private mapping only where the mapping holds
// anonymous memory (an anon_vma: the kernel's vma_needs_copy). A file mapping nothing ever wrote
// (machine code, read-only data: libc's and libm's text, python3's .rodata past its 2 MB parts,
// the extension modules, the locale) is left out, and each child faults those pages in again at
// its first touch (fault-around maps up to 16 entries a fault). On this project's PVM guest every
// fault traps through the hypervisor: a program's child took about 45 of its 135 page faults
// there (session 23, docs/eval.md "Throughput").
//
// How: each private, read-only, file-backed mapping that has pages mapped and no anonymous memory
// is made writable (its execute right kept, so code running from it runs on), the first byte of
// its first page is written with the value it holds (the kernel copies that one page: the same
// bytes, now anonymous, and the mapping gets its anon_vma), and its protection is restored. Same
// bytes at the same addresses with the same protections; the fork then copies the entries of every
// page the interpreter has mapped, and a child finds them mapped.
//
// Only the calling thread may run while it works (the zygote has no other): no thread may write
// to a mapping in the moment it is writable. A mapping the kernel will not make writable is left
// as it was. One whose protection cannot be restored makes the call return -1, and the zygote
// then ends before its first fork: no child may inherit a writable read-only mapping.
// Costs: about 4 ms of CPU here, once (two mprotect calls per mapping and one copied page each:
// 36 mappings in a fresh interpreter, load ~14); the fork copies, and each child's exit drops, the
// entries of those pages; one 4 kB page per such mapping; the commit charge of each (it was
// writable for a moment, and the kernel keeps the charge), taken again by every fork: it matters
// only under vm.overcommit_memory=2, where each child is charged the whole size of those mappings.
#include <stdint.h>
#include <sys/mman.h>

#include "trex/oreval/proc_maps.h"

// Gives every private read-only file mapping with pages mapped and no anonymous memory one
// anonymous page (the file's comment), so that fork copies its entries. Returns how many
// mappings now have one (0 where none could or /proc/self/smaps cannot be read), -1 where a
// mapping's protection could not be restored (the caller must not fork).
extern "C" __attribute__((visibility("default"))) int trex_zygote_fork_file_pages() {
  int done = 0;
  for (const trex::oreval::ProcMapping& m : trex::oreval::read_proc_mappings("/proc/self/smaps")) {
    bool read_only = m.perms == "r--p" || m.perms == "r-xp";
    // A mapping smaps gave no Anonymous line for (-1) is left alone, as one with anonymous memory.
    if (!m.file() || !read_only || m.rss_kb <= 0 || m.anonymous_kb != 0 || m.end <= m.start) continue;
    int prot = PROT_READ | (m.perms[2] == 'x' ? PROT_EXEC : 0);
    void* at = reinterpret_cast<void*>(m.start);
    size_t length = m.end - m.start;
    if (mprotect(at, length, prot | PROT_WRITE) != 0) continue;  // left as it was
    volatile unsigned char* first = reinterpret_cast<volatile unsigned char*>(m.start);
    *first = *first;
    if (mprotect(at, length, prot) != 0) return -1;
    ++done;
  }
  return done;
}
