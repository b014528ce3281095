// A hash multimap from 64-bit keys to 32-bit values whose table lives in a file, for the
// deduplication indexes of a corpus of any size.
//
// The table is open addressing with linear probing in a scratch file, read and written a
// page at a time through a PageCache (page_cache.h) that several tables share: the process
// holds the cache's budget of the file, not the file. The file is created empty (and at once
// unlinked), grows by doubling (rehashing into a new file) and goes with the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "trex/ordata/page_cache.h"

namespace trex::ordata {

// Check is what a slot keeps of its key. uint64_t: the whole key, for the indexes where an
// equal key is the verdict (exact and structural duplicates); 16-byte slots. uint32_t: the
// key's high 32 bits, for the LSH bands, where an equal key only makes a candidate whose
// signature is then compared: 8-byte slots, half the file, and a false match (about one probe
// in 2^32 / size) costs one comparison, not a verdict. The band table is the largest index
// (32 entries per sample) and must fit the cache at a million samples: a miss costs a pread
// and a pwrite of the evicted page, which under this VM's writeback throttling took ~150 us.
template <class Check>
class BasicSpillTable {
 public:
  // Throws InputError naming `path` when the file cannot be created or grown.
  BasicSpillTable(PageCache& cache, std::string path, uint64_t initial_slots);
  ~BasicSpillTable();
  BasicSpillTable(const BasicSpillTable&) = delete;
  BasicSpillTable& operator=(const BasicSpillTable&) = delete;

  // Calls each(value) for every value stored under key, oldest first, until it returns true.
  // Returns whether one did. each may use the cache (the slot is copied out first).
  // One cache lookup per page of the run, not per slot: a band key shared by thousands of
  // templated samples makes a run of thousands of slots, walked on every probe. The page is
  // looked up again after each(), which may have evicted it.
  template <class F>
  bool find(uint64_t full_key, F&& each) const {
    const Check key = stored(full_key);
    for (uint64_t i = key & mask_;;) {
      const unsigned char* page = cache_.page(file_, i / kSlotsPerPage, false);
      bool called = false;
      do {
        const Slot s = at(page, i);
        if (s.key == 0) return false;
        i = (i + 1) & mask_;
        if (s.key == key) {
          if (each(uint32_t(s.value))) return true;
          called = true;
        }
      } while (!called && i % kSlotsPerPage != 0);
    }
  }
  void insert(uint64_t key, uint32_t value);
  uint64_t size() const { return size_; }
  uint64_t bytes() const { return (mask_ + 1) * sizeof(Slot); }

 private:
  struct Slot {
    Check key;    // stored(key); 0: empty
    Check value;  // a uint32_t value, widened to the slot's half
  };
  static constexpr uint64_t kSlotsPerPage = PageCache::kPageBytes / sizeof(Slot);
  static Check stored(uint64_t key) {
    const Check c = sizeof(Check) == 8 ? Check(key) : Check(key >> 32);
    return c == 0 ? 1 : c;
  }
  static Slot at(const unsigned char* page, uint64_t i) {
    Slot s;
    std::memcpy(&s, page + (i % kSlotsPerPage) * sizeof(Slot), sizeof s);
    return s;
  }
  Slot slot(uint32_t file, uint64_t i) const { return at(cache_.page(file, i / kSlotsPerPage, false), i); }
  void open_file(uint64_t slots);  // a new scratch file of `slots` empty slots becomes the table
  void place(const Slot& s);       // linear probing from the key's home slot
  void grow();

  PageCache& cache_;
  std::string path_;
  int fd_ = -1;
  uint32_t file_ = 0;
  uint64_t mask_ = 0, size_ = 0;
};

using SpillTable = BasicSpillTable<uint64_t>;
using CompactSpillTable = BasicSpillTable<uint32_t>;

// Fixed-size records appended to a scratch file and read back by number, through a
// PageCache. The record size must divide the page size, so that a record is in one page.
class SpillRecords {
 public:
  SpillRecords(PageCache& cache, std::string path, size_t record_bytes);
  ~SpillRecords();
  SpillRecords(const SpillRecords&) = delete;
  SpillRecords& operator=(const SpillRecords&) = delete;

  uint32_t append(const void* record);  // returns its number
  void read(uint32_t n, void* out) const;
  uint32_t size() const { return count_; }
  uint64_t bytes() const { return capacity_ * record_; }

 private:
  PageCache& cache_;
  std::string path_;
  int fd_ = -1;
  uint32_t file_ = 0;
  size_t record_;
  uint64_t capacity_ = 0;
  uint32_t count_ = 0;
};

}  // namespace trex::ordata
