// One reader of /proc/PID/maps and /proc/PID/smaps (proc_maps.h).
#include "trex/oreval/proc_maps.h"

#include <stdio.h>
#include <string.h>

namespace trex::oreval {

std::vector<ProcMapping> read_proc_mappings(const char* file) {
  std::vector<ProcMapping> out;
  FILE* f = fopen(file, "re");
  if (!f) return out;
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    // A header has a '-' before its first blank ("start-end perms ..."); a field line of smaps
    // ("Rss:   4 kB", "VmFlags: rd ex") has none.
    const char* dash = strchr(line, '-');
    const char* blank = strchr(line, ' ');
    unsigned long start, end;
    char perms[8];
    int path_at = 0;
    if (dash && blank && dash < blank &&
        sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &start, &end, perms, &path_at) >= 3) {
      ProcMapping m;
      m.start = start, m.end = end, m.perms = perms;
      if (path_at > 0) {
        m.path = line + path_at;
        while (!m.path.empty() && (m.path.back() == '\n' || m.path.back() == ' ')) m.path.pop_back();
      }
      out.push_back(std::move(m));
      continue;
    }
    if (out.empty()) continue;
    long kb;
    if (sscanf(line, "Rss: %ld kB", &kb) == 1) out.back().rss_kb = kb;
    else if (sscanf(line, "Anonymous: %ld kB", &kb) == 1) out.back().anonymous_kb = kb;
    else if (sscanf(line, "AnonHugePages: %ld kB", &kb) == 1) out.back().anon_huge_pages_kb = kb;
  }
  fclose(f);
  return out;
}

}  // namespace trex::oreval
