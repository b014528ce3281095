#include "trex/ordata/page_cache.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "trex/util/error.h"
#include "trex/util/io_error.h"

namespace trex::ordata {

namespace {

constexpr int kPageShift = 44;  // tag = (file << 44) | page

}  // namespace

PageCache::PageCache(uint64_t budget_bytes) {
  uint64_t frames = std::max(budget_bytes, kMinBytes) / kPageBytes;
  // Any number of sets (the set is picked by a multiply-shift, not a mask), so the cache holds
  // the whole budget: a power of two rounded a 768 MB budget down to 512 MB.
  sets_ = std::max<size_t>(1, size_t(frames / kWays));
  frames_ = sets_ * kWays;
  void* p = ::mmap(nullptr, frames_ * kPageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error(std::string("dedup page cache: mmap: ") + std::strerror(errno));
  frames_data_ = static_cast<unsigned char*>(p);
  tag_.assign(frames_, kEmpty);
  used_.assign(frames_, 0);
  dirty_.assign(frames_, 0);
}

PageCache::~PageCache() { ::munmap(frames_data_, frames_ * kPageBytes); }

uint32_t PageCache::add_file(int fd, std::string path) {
  if (files_.size() >= (size_t(1) << (64 - kPageShift)) - 1) throw std::logic_error("dedup page cache: too many files");
  files_.push_back({fd, std::move(path)});
  return uint32_t(files_.size() - 1);
}

void PageCache::drop_file(uint32_t file, bool write_back_dirty) {
  for (size_t f = 0; f < frames_; ++f) {
    if (tag_[f] == kEmpty || (tag_[f] >> kPageShift) != file) continue;
    if (write_back_dirty && dirty_[f]) write_back(f);
    tag_[f] = kEmpty;
    used_[f] = 0;
    dirty_[f] = 0;
    --in_use_;
  }
  files_[file].fd = -1;
}

void PageCache::write_back(size_t frame) {
  const File& file = files_[tag_[frame] >> kPageShift];
  const uint64_t page_no = tag_[frame] & ((uint64_t(1) << kPageShift) - 1);
  const unsigned char* src = data(frame);
  size_t done = 0;
  while (done < kPageBytes) {
    ssize_t n = ::pwrite(file.fd, src + done, kPageBytes - done, off_t(page_no * kPageBytes + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw IoError(file.path + ": cannot write a dedup index file: " + std::strerror(n < 0 ? errno : ENOSPC));
    done += size_t(n);
  }
  dirty_[frame] = 0;
}

unsigned char* PageCache::page(uint32_t file, uint64_t page_no, bool write) {
  const uint64_t tag = (uint64_t(file) << kPageShift) | page_no;
  // Fibonacci hashing of the tag picks the set, so the pages of several files spread evenly;
  // the hash's high bits scaled to [0, sets) (a multiply-shift) allow any number of sets.
  const uint64_t h = tag * 0x9e3779b97f4a7c15ULL;
  const size_t set = size_t((static_cast<unsigned __int128>(h) * sets_) >> 64);
  const size_t base = set * kWays;
  size_t victim = base;  // an empty frame (used 0) or else the least recently used
  for (size_t f = base; f < base + kWays; ++f) {
    if (tag_[f] == tag) {
      used_[f] = ++tick_;
      dirty_[f] |= uint8_t(write);
      return data(f);
    }
    if (used_[f] < used_[victim]) victim = f;
  }
  ++misses_;
  if (tag_[victim] != kEmpty) {
    if (dirty_[victim]) write_back(victim);
    tag_[victim] = kEmpty;  // a failed read below leaves no stale tag behind
    used_[victim] = 0;
    --in_use_;
  }
  const File& fi = files_[file];
  unsigned char* dst = data(victim);
  size_t done = 0;
  while (done < kPageBytes) {
    ssize_t n = ::pread(fi.fd, dst + done, kPageBytes - done, off_t(page_no * kPageBytes + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(fi.path, 0, std::string("cannot read a dedup index file: ") + std::strerror(errno));
    if (n == 0) {  // past the end: the file is sparse or shorter; those bytes are zeros
      std::memset(dst + done, 0, kPageBytes - done);
      break;
    }
    done += size_t(n);
  }
  ++in_use_;
  tag_[victim] = tag;
  used_[victim] = ++tick_;
  dirty_[victim] = uint8_t(write);
  return dst;
}

}  // namespace trex::ordata
