// A hash multimap from 64-bit keys to 32-bit values whose table lives in a file, for the
// deduplication indexes of a corpus of any size.
//
// The table is open addressing with linear probing in a file mapped MAP_SHARED: the
// kernel keeps the hot part in its page cache and writes the rest back to disk, and
// release() drops the mapped pages from this process (madvise MADV_DONTNEED), so the
// resident memory of an index is what was touched since the last release, not its size.
// The file is a scratch file: it is created empty, grows by doubling (rehashing in chunks,
// releasing as it goes) and is removed by the destructor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace trex::ordata {

class SpillTable {
 public:
  // Throws InputError naming `path` when the file cannot be created or mapped.
  SpillTable(std::string path, uint64_t initial_slots);
  ~SpillTable();
  SpillTable(const SpillTable&) = delete;
  SpillTable& operator=(const SpillTable&) = delete;

  // Calls each(value) for every value stored under key, oldest first, until it returns true.
  // Returns whether one did.
  template <class F>
  bool find(uint64_t key, F&& each) const {
    key = stored(key);
    for (uint64_t i = key & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == 0) return false;
      if (s.key == key && each(uint32_t(s.value))) return true;
    }
  }
  void insert(uint64_t key, uint32_t value);
  void release();  // drops this process's resident pages of the table
  uint64_t size() const { return size_; }
  uint64_t bytes() const { return (mask_ + 1) * sizeof(Slot); }

 private:
  struct Slot {
    uint64_t key;    // 0: empty
    uint64_t value;
  };
  static uint64_t stored(uint64_t key) { return key == 0 ? 1 : key; }
  void map(uint64_t slots);
  void grow();

  std::string path_;
  int fd_ = -1;
  Slot* slots_ = nullptr;
  uint64_t mask_ = 0, size_ = 0;
};

// Fixed-size records (a signature, an id) appended to a mapped scratch file and read back by
// number; release() drops resident pages as SpillTable's does.
class SpillRecords {
 public:
  SpillRecords(std::string path, size_t record_bytes);
  ~SpillRecords();
  SpillRecords(const SpillRecords&) = delete;
  SpillRecords& operator=(const SpillRecords&) = delete;

  uint32_t append(const void* record);  // returns its number
  const unsigned char* at(uint32_t n) const { return base_ + size_t(n) * record_; }
  uint32_t size() const { return count_; }
  uint64_t bytes() const { return capacity_ * record_; }
  void release();

 private:
  void reserve(uint64_t records);
  std::string path_;
  int fd_ = -1;
  size_t record_;
  unsigned char* base_ = nullptr;
  uint64_t capacity_ = 0;
  uint32_t count_ = 0;
};

}  // namespace trex::ordata
