// read_proc_mappings reads the headers and the sizes of a maps or smaps listing: a written one
// with the lines that tripped parsers before (a path with blanks, field lines, a header-like
// field), and the process's own listing.
#include "trex/oreval/proc_maps.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace trex::oreval {
namespace {

std::string write_listing(const std::string& text) {
  char name[] = "/tmp/trex-proc-maps-XXXXXX";
  int fd = mkstemp(name);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(name) << text;
  return name;
}

TEST(ProcMaps, ReadsHeadersAndSmapsSizes) {
  std::string file = write_listing(
      "00400000-00600000 r-xp 00000000 08:01 123   /usr/bin/python3.11\n"
      "Size:               2048 kB\n"
      "Rss:                1024 kB\n"
      "Anonymous:             0 kB\n"
      "AnonHugePages:         0 kB\n"
      "VmFlags: rd ex mr mw me dw\n"
      "7f0000000000-7f0000200000 rw-p 00000000 00:00 0 \n"
      "Rss:                2048 kB\n"
      "Anonymous:          2048 kB\n"
      "AnonHugePages:      2048 kB\n"
      "7f0000200000-7f0000201000 r--p 00001000 08:01 77   /tmp/a folder/lib x.so (deleted)\n"
      "Rss:                   4 kB\n"
      "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0   [stack]\n");
  std::vector<ProcMapping> maps = read_proc_mappings(file.c_str());
  unlink(file.c_str());
  ASSERT_EQ(maps.size(), 4u);
  EXPECT_EQ(maps[0].start, 0x400000u);
  EXPECT_EQ(maps[0].end, 0x600000u);
  EXPECT_EQ(maps[0].perms, "r-xp");
  EXPECT_EQ(maps[0].path, "/usr/bin/python3.11");
  EXPECT_TRUE(maps[0].file());
  EXPECT_EQ(maps[0].rss_kb, 1024);
  EXPECT_EQ(maps[0].anonymous_kb, 0);
  EXPECT_EQ(maps[0].anon_huge_pages_kb, 0);
  EXPECT_EQ(maps[1].path, "");
  EXPECT_FALSE(maps[1].file());
  EXPECT_EQ(maps[1].anon_huge_pages_kb, 2048);
  EXPECT_EQ(maps[2].path, "/tmp/a folder/lib x.so (deleted)");
  EXPECT_EQ(maps[2].rss_kb, 4);
  EXPECT_EQ(maps[2].anonymous_kb, -1);  // not listed: never taken for 0
  EXPECT_EQ(maps[3].path, "[stack]");
  EXPECT_FALSE(maps[3].file());
  EXPECT_EQ(maps[3].rss_kb, -1);
}

TEST(ProcMaps, AMissingFileGivesNothing) {
  EXPECT_TRUE(read_proc_mappings("/nonexistent/trex/maps").empty());
}

// The process's own listing: this function's code is in an executable file mapping, and a page
// written just now is anonymous memory that smaps counts.
TEST(ProcMaps, FindsTheProcessesOwnCodeAndMemory) {
  uintptr_t code = uintptr_t(&read_proc_mappings);
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  static_cast<volatile char*>(page)[0] = 1;
  for (const char* file : {"/proc/self/maps", "/proc/self/smaps"}) {
    bool smaps = std::string(file) == "/proc/self/smaps";
    int code_seen = 0, page_seen = 0;
    for (const ProcMapping& m : read_proc_mappings(file)) {
      if (m.start <= code && code < m.end) {
        ++code_seen;
        EXPECT_EQ(m.perms, "r-xp") << file;
        EXPECT_TRUE(m.file()) << file << " " << m.path;
      }
      if (m.start <= uintptr_t(page) && uintptr_t(page) < m.end) {
        ++page_seen;
        if (smaps) EXPECT_GE(m.anonymous_kb, 4) << file;
        else EXPECT_EQ(m.anonymous_kb, -1) << file;
      }
    }
    EXPECT_EQ(code_seen, 1) << file;
    EXPECT_EQ(page_seen, 1) << file;
  }
  munmap(page, 4096);
}

}  // namespace
}  // namespace trex::oreval
