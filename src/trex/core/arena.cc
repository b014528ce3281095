#include "trex/core/arena.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <stdexcept>

namespace trex::core {

// Buffers of 2 MiB and more start on a 2 MiB boundary and ask for transparent huge pages
// (MADV_HUGEPAGE): where the system's THP mode is "madvise" (Debian's default, and this VM's)
// every other buffer is mapped in 4 KiB pages, and a TLB miss walks the guest's and the host's
// page tables. Here the STREAM triad of two threads over 3 x 128 MiB measured (best of 20) 35-39
// GB/s on 4 KiB pages against 46-53 GB/s on huge pages, and the kernel suite's streaming kernels
// ran 1.1-1.7x faster (bench/kernel_triad_bench, docs/kernels-suite.md); the hardware probe's
// arrays (hw_probe.cc) always asked for huge pages, so the kernels' share of the probed triad
// also counted the difference in pages. A hint: where none is free, 4 KiB pages as before.
constexpr size_t kHugePage = size_t(2) << 20;

void* aligned_alloc_bytes(size_t bytes, size_t alignment) {
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0)
    throw std::invalid_argument("aligned_alloc_bytes: alignment must be a power of two");
  const bool huge = bytes >= kHugePage;
  if (huge && alignment < kHugePage) alignment = kHugePage;
  // std::aligned_alloc wants a size that is a multiple of the alignment.
  size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  if (rounded < bytes) throw std::bad_alloc();
  if (rounded == 0) rounded = alignment;
  void* p = std::aligned_alloc(alignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  if (huge) madvise(p, rounded, MADV_HUGEPAGE);  // a hint: failure leaves 4 KiB pages
  return p;
}

void aligned_free(void* p) { std::free(p); }

Arena::Arena(size_t block_bytes) : block_bytes_(block_bytes == 0 ? 4096 : block_bytes) {}

Arena::~Arena() {
  for (Block& b : blocks_) aligned_free(b.data);
}

size_t Arena::bytes_reserved() const {
  size_t total = 0;
  for (const Block& b : blocks_) total += b.size;
  return total;
}

void Arena::add_block(size_t min_bytes) {
  size_t size = min_bytes > block_bytes_ ? min_bytes : block_bytes_;
  char* data = static_cast<char*>(aligned_alloc_bytes(size, 4096));
  blocks_.insert(blocks_.begin() + std::ptrdiff_t(blocks_.empty() ? 0 : current_ + 1), Block{data, size});
  current_ = blocks_.size() == 1 ? 0 : current_ + 1;
  offset_ = 0;
}

void* Arena::allocate(size_t bytes, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > 4096)
    throw std::invalid_argument("Arena::allocate: alignment must be a power of two <= 4096");
  if (bytes == 0) bytes = 1;  // distinct pointers for distinct requests
  // Blocks start 4096-aligned, so aligning the offset aligns the address.
  while (!blocks_.empty()) {
    size_t start = (offset_ + alignment - 1) & ~(alignment - 1);
    if (start + bytes <= blocks_[current_].size) {
      used_ += start + bytes - offset_;
      offset_ = start + bytes;
      return blocks_[current_].data + start;
    }
    if (current_ + 1 >= blocks_.size()) break;
    // A block kept from before a reset, or one added for a large request: fill it next.
    ++current_;
    offset_ = 0;
  }
  add_block(bytes);
  used_ += bytes;
  offset_ = bytes;
  return blocks_[current_].data;
}

void Arena::reset() {
  if (blocks_.size() > 1) {
    // Coalesce into one block as large as all blocks held, so the next round fits in it.
    size_t want = bytes_reserved();
    for (Block& b : blocks_) aligned_free(b.data);
    blocks_.clear();
    current_ = 0;
    add_block(want);
  }
  current_ = 0;
  offset_ = 0;
  used_ = 0;
}

}  // namespace trex::core
