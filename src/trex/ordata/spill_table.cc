#include "trex/ordata/spill_table.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "trex/util/error.h"

namespace trex::ordata {

namespace {

int create_scratch(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw InputError(path, 0, std::string("cannot create a dedup index file: ") + std::strerror(errno));
  ::unlink(path.c_str());  // a scratch file: gone with the process, even after a crash
  return fd;
}

void* map_file(int fd, const std::string& path, uint64_t bytes) {
  // posix_fallocate reserves the blocks, so a full disk fails here with ENOSPC and not later
  // as a SIGBUS on a page the kernel cannot write.
  int rc = ::posix_fallocate(fd, 0, off_t(bytes));
  if (rc != 0) throw InputError(path, 0, std::string("cannot grow a dedup index file: ") + std::strerror(rc));
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) throw InputError(path, 0, std::string("cannot map a dedup index file: ") + std::strerror(errno));
  return p;
}

}  // namespace

SpillTable::SpillTable(std::string path, uint64_t initial_slots) : path_(std::move(path)) {
  uint64_t n = 1024;
  while (n < initial_slots) n <<= 1;
  fd_ = create_scratch(path_);
  map(n);
}

SpillTable::~SpillTable() {
  if (slots_) ::munmap(slots_, bytes());
  if (fd_ >= 0) ::close(fd_);
}

void SpillTable::map(uint64_t slots) {
  slots_ = static_cast<Slot*>(map_file(fd_, path_, slots * sizeof(Slot)));
  mask_ = slots - 1;
}

void SpillTable::insert(uint64_t key, uint32_t value) {
  if ((size_ + 1) * 2 > mask_ + 1) grow();
  key = stored(key);
  uint64_t i = key & mask_;
  while (slots_[i].key != 0) i = (i + 1) & mask_;
  slots_[i] = {key, value};
  ++size_;
}

void SpillTable::grow() {
  // The new table goes into a second scratch file; entries move in slot order, so values
  // under one key keep their order (probing visits them oldest first).
  const uint64_t old_slots = mask_ + 1;
  Slot* old = slots_;
  const int old_fd = fd_;
  fd_ = create_scratch(path_);
  map(old_slots * 2);
  size_ = 0;
  constexpr uint64_t kChunk = 1 << 16, kRelease = 1 << 13;
  // A run of entries that wrapped around the end of the old table belongs before slot 0's
  // entries of the same run; start after the first empty slot so every run moves in order.
  uint64_t start = 0;
  while (old[start].key != 0) ++start;
  for (uint64_t k = 0; k < old_slots; ++k) {
    const uint64_t i = (start + k) & (old_slots - 1);
    const Slot& s = old[i];
    if (s.key != 0) {
      uint64_t j = s.key & mask_;
      while (slots_[j].key != 0) j = (j + 1) & mask_;
      slots_[j] = s;
      ++size_;
    }
    // The new table is written at random: at most kRelease pages are resident at a time.
    if ((k + 1) % kRelease == 0) release();
    // The old table is read once: drop each aligned chunk as its last slot is read, so that a
    // grow never holds the old table whole (the pages stay in the file; this only unmaps them).
    if ((i + 1) % kChunk == 0) ::madvise(old + (i + 1 - kChunk), kChunk * sizeof(Slot), MADV_DONTNEED);
  }
  ::munmap(old, old_slots * sizeof(Slot));
  ::close(old_fd);
  release();
}

void SpillTable::release() { ::madvise(slots_, bytes(), MADV_DONTNEED); }

SpillRecords::SpillRecords(std::string path, size_t record_bytes) : path_(std::move(path)), record_(record_bytes) {
  fd_ = create_scratch(path_);
  reserve(4096);
}

SpillRecords::~SpillRecords() {
  if (base_) ::munmap(base_, capacity_ * record_);
  if (fd_ >= 0) ::close(fd_);
}

void SpillRecords::reserve(uint64_t records) {
  if (base_) ::munmap(base_, capacity_ * record_);
  base_ = static_cast<unsigned char*>(map_file(fd_, path_, records * record_));
  capacity_ = records;
}

uint32_t SpillRecords::append(const void* record) {
  if (count_ == capacity_) reserve(capacity_ * 2);  // the file keeps its contents; only the mapping grows
  std::memcpy(base_ + size_t(count_) * record_, record, record_);
  return count_++;
}

void SpillRecords::release() { ::madvise(base_, capacity_ * record_, MADV_DONTNEED); }

}  // namespace trex::ordata
