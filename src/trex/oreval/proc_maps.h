// The calling process's own mappings as /proc/self/maps or /proc/self/smaps lists them, for the
// warm interpreter's one-time set-up before its first fork (huge_text.cc, fork_file_pages.cc).
// One reader, so that both read a mapping's header line ("start-end perms offset dev inode
// [path]") the same way, and smaps' field lines are never taken for a header.
#pragma once

#include <stdint.h>

#include <string>
#include <vector>

namespace trex::oreval {

struct ProcMapping {
  uintptr_t start = 0, end = 0;
  std::string perms;  // "r-xp", ...
  std::string path;   // as listed, trailing blanks cut; empty for an anonymous mapping
  // From smaps only (-1 where the file is maps, or smaps lists no such field).
  long rss_kb = -1, anonymous_kb = -1, anon_huge_pages_kb = -1;

  // A mapping of a file (a path), not [heap], [stack], [vdso] or an anonymous one.
  bool file() const { return !path.empty() && path[0] == '/'; }
};

// Every mapping `file` lists (a maps or smaps file: /proc/self/maps, /proc/self/smaps); empty
// where it cannot be opened. Allocates: not for use between fork and exec.
std::vector<ProcMapping> read_proc_mappings(const char* file);

}  // namespace trex::oreval
