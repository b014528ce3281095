// A bounded in-process cache of 4 KB pages of scratch files, read and written with
// pread/pwrite: the memory of the dedup indexes (spill_table.h) whatever their size.
//
// The indexes used to be mapped MAP_SHARED. Every page they touched then counted in the
// process's resident memory until it was dropped, and every touch of a dropped page was a
// page fault that dirtied a file page (about 30 us on this VM): at a million samples the
// index files were 1.4 GB, the peak RSS followed them, and the serial finisher spent most of
// its time in faults. Here a miss is one pread (and one pwrite when the evicted page is
// dirty) into a fixed set of frames; the files themselves live in the kernel's page cache,
// which can write them back to disk, and the process holds at most the budget.
//
// Set-associative (16 ways, least recently used within a set), so a run whose files fit in
// most of the budget keeps them nearly whole (with 8 ways, pages hashed to sets overflowed
// some sets once the files filled ~80% of it), and a larger one hits in proportion to the
// budget. Single-threaded: one Deduplicator owns one cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trex::ordata {

class PageCache {
 public:
  static constexpr size_t kPageBytes = 4096;
  static constexpr uint64_t kMinBytes = uint64_t(64) * kPageBytes;  // a budget of 0 still works

  explicit PageCache(uint64_t budget_bytes);
  ~PageCache();
  PageCache(const PageCache&) = delete;
  PageCache& operator=(const PageCache&) = delete;

  // Registers an open file (path for errors); returns its number for page().
  uint32_t add_file(int fd, std::string path);
  // Forgets the file's cached pages, writing the changed ones back first when write_back.
  // Call before its descriptor is closed.
  void drop_file(uint32_t file, bool write_back);
  // The bytes of page `page_no` of `file`, valid until the next call on this cache; marks
  // the page changed when `write`. Pages past the end of the file read as zeros. Throws
  // InputError naming the file when a read or a write-back fails.
  unsigned char* page(uint32_t file, uint64_t page_no, bool write);

  uint64_t capacity_bytes() const { return uint64_t(frames_) * kPageBytes; }
  uint64_t resident_bytes() const { return uint64_t(in_use_) * kPageBytes; }  // frames holding a page
  uint64_t misses() const { return misses_; }

 private:
  static constexpr int kWays = 16;
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  void write_back(size_t frame);
  unsigned char* data(size_t frame) const { return frames_data_ + frame * kPageBytes; }

  struct File {
    int fd = -1;
    std::string path;
  };
  std::vector<File> files_;
  size_t frames_ = 0, sets_ = 0, in_use_ = 0;
  unsigned char* frames_data_ = nullptr;  // anonymous mapping: a frame is resident once used
  std::vector<uint64_t> tag_;             // (file << 44) | page, or kEmpty
  std::vector<uint64_t> used_;            // last access tick, for LRU within a set
  std::vector<uint8_t> dirty_;
  uint64_t tick_ = 0, misses_ = 0;
};

}  // namespace trex::ordata
