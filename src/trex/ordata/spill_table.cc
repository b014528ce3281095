#include "trex/ordata/spill_table.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "trex/util/error.h"
#include "trex/util/io_error.h"

namespace trex::ordata {

namespace {

int create_scratch(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw IoError(path + ": cannot create a dedup index file: " + std::strerror(errno));
  ::unlink(path.c_str());  // a scratch file: gone with the process, even after a crash
  return fd;
}

// Makes bytes [from, to) of the file: posix_fallocate reserves the blocks, so a full disk
// fails here with ENOSPC, naming the file, and not later in a page's write-back. Then zeros are
// written over them. Why: fallocate leaves "unwritten" extents, and each page the kernel writes
// back later splits them, so a file written at random pages ends as tens of thousands of
// extents; freeing it (the last close of the unlinked file: at a grow, and at exit) then cost
// one synchronous discard per extent on a filesystem mounted `-o discard` (this VM's /tmp):
// a 512 MB file with a quarter of its pages written back took 201 s to close, the zero-filled
// one 0.15 s (docs/data.md, the dedup step). The zeros are written once, in
// order, so the file stays a few extents that later writes do not split.
void reserve_file(int fd, const std::string& path, uint64_t from, uint64_t to) {
  int rc = ::posix_fallocate(fd, off_t(from), off_t(to - from));
  if (rc != 0) throw IoError(path + ": cannot grow a dedup index file: " + std::strerror(rc));
  const std::vector<char> zeros(size_t(1) << 20, 0);
  for (uint64_t at = from; at < to;) {
    ssize_t n = ::pwrite(fd, zeros.data(), size_t(std::min<uint64_t>(zeros.size(), to - at)), off_t(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw IoError(path + ": cannot grow a dedup index file: " + std::strerror(n < 0 ? errno : ENOSPC));
    at += uint64_t(n);
  }
}

}  // namespace

template <class Check>
BasicSpillTable<Check>::BasicSpillTable(PageCache& cache, std::string path, uint64_t initial_slots)
    : cache_(cache), path_(std::move(path)) {
  uint64_t n = 1024;
  while (n < initial_slots) n <<= 1;
  open_file(n);
}

template <class Check>
BasicSpillTable<Check>::~BasicSpillTable() {
  cache_.drop_file(file_, false);
  ::close(fd_);
}

template <class Check>
void BasicSpillTable<Check>::open_file(uint64_t slots) {
  int fd = create_scratch(path_);
  try {
    reserve_file(fd, path_, 0, slots * sizeof(Slot));
  } catch (...) {
    ::close(fd);
    throw;
  }
  fd_ = fd;
  file_ = cache_.add_file(fd_, path_);
  mask_ = slots - 1;
}

template <class Check>
void BasicSpillTable<Check>::place(const Slot& s) {
  // The run is walked a page at a time, like find(): one cache lookup per page, not per slot.
  // The table's size is a multiple of a page, so a run that wraps starts a fresh page at 0.
  uint64_t i = s.key & mask_;
  for (bool empty = false; !empty;) {
    const unsigned char* page = cache_.page(file_, i / kSlotsPerPage, false);
    do {
      if (at(page, i).key == 0) {
        empty = true;
        break;
      }
      i = (i + 1) & mask_;
    } while (i % kSlotsPerPage != 0);
  }
  std::memcpy(cache_.page(file_, i / kSlotsPerPage, true) + (i % kSlotsPerPage) * sizeof(Slot), &s, sizeof s);
  ++size_;
}

template <class Check>
void BasicSpillTable<Check>::insert(uint64_t key, uint32_t value) {
  if ((size_ + 1) * 2 > mask_ + 1) grow();
  place({stored(key), Check(value)});
}

template <class Check>
void BasicSpillTable<Check>::grow() {
  // The new table goes into a second scratch file; entries move in slot order, so values
  // under one key keep their order (probing visits them oldest first). The old table is read
  // a page at a time through the cache, and its pages are forgotten (not written) at the end.
  const uint64_t old_slots = mask_ + 1;
  // A 32-bit check is also the home slot's bits: a larger table would leave slots unused.
  if (sizeof(Check) == 4 && old_slots * 2 > (uint64_t(1) << 32))
    throw std::logic_error("CompactSpillTable: more than 2^31 entries");
  const uint32_t old_file = file_;
  const int old_fd = fd_;
  // A run of entries that wrapped around the end of the old table belongs before slot 0's
  // entries of the same run; start after the first empty slot so every run moves in order.
  uint64_t start = 0;
  while (slot(old_file, start).key != 0) ++start;
  open_file(old_slots * 2);
  size_ = 0;
  Slot page[kSlotsPerPage];
  uint64_t loaded = ~uint64_t(0);
  for (uint64_t k = 0; k < old_slots; ++k) {
    const uint64_t i = (start + k) & (old_slots - 1);
    if (i / kSlotsPerPage != loaded) {  // copied out: placing entries below uses the cache
      loaded = i / kSlotsPerPage;
      std::memcpy(page, cache_.page(old_file, loaded, false), sizeof page);
    }
    const Slot& s = page[i % kSlotsPerPage];
    if (s.key != 0) place(s);
  }
  cache_.drop_file(old_file, false);
  ::close(old_fd);
}

template class BasicSpillTable<uint64_t>;
template class BasicSpillTable<uint32_t>;

SpillRecords::SpillRecords(PageCache& cache, std::string path, size_t record_bytes)
    : cache_(cache), path_(std::move(path)), record_(record_bytes) {
  if (record_ == 0 || PageCache::kPageBytes % record_ != 0)
    throw std::logic_error("SpillRecords: the record size must divide the page size");
  fd_ = create_scratch(path_);
  capacity_ = PageCache::kPageBytes / record_;
  try {
    reserve_file(fd_, path_, 0, capacity_ * record_);
  } catch (...) {
    ::close(fd_);
    throw;
  }
  file_ = cache_.add_file(fd_, path_);
}

SpillRecords::~SpillRecords() {
  cache_.drop_file(file_, false);
  ::close(fd_);
}

uint32_t SpillRecords::append(const void* record) {
  if (count_ == UINT32_MAX) throw std::logic_error("SpillRecords: more than 2^32 - 1 records");
  if (count_ == capacity_) {  // the file keeps its contents and its cached pages
    reserve_file(fd_, path_, capacity_ * record_, capacity_ * 2 * record_);
    capacity_ *= 2;
  }
  const uint64_t at = uint64_t(count_) * record_;
  std::memcpy(cache_.page(file_, at / PageCache::kPageBytes, true) + at % PageCache::kPageBytes, record, record_);
  return count_++;
}

void SpillRecords::read(uint32_t n, void* out) const {
  const uint64_t at = uint64_t(n) * record_;
  std::memcpy(out, cache_.page(file_, at / PageCache::kPageBytes, false) + at % PageCache::kPageBytes, record_);
}

}  // namespace trex::ordata
