// Accounting of the memory an optimizer holds, so that "resident optimizer memory is bounded by
// its buffers" is a number a test can check rather than a timing or an RSS guess.
//
// Every buffer an optimizer allocates for its state (the in-memory AdamW's three arrays, the swap
// optimizer's slots) is an AccountedBuffer charged to the optimizer's MemoryAccount: current()
// is what is held now, peak() the most ever held at once. Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace trex::optim {

class MemoryAccount {
 public:
  void charge(size_t bytes);
  void release(size_t bytes);
  size_t current() const { return current_.load(); }
  size_t peak() const { return peak_.load(); }

 private:
  std::atomic<size_t> current_{0};
  std::atomic<size_t> peak_{0};
};

// `count` floats aligned to 4096 bytes (the O_DIRECT alignment), uninitialised, charged to
// `account` for as long as the buffer lives. Move-only.
class AccountedBuffer {
 public:
  AccountedBuffer() = default;
  AccountedBuffer(MemoryAccount* account, size_t count);
  ~AccountedBuffer();
  AccountedBuffer(AccountedBuffer&& o) noexcept;
  AccountedBuffer& operator=(AccountedBuffer&& o) noexcept;
  AccountedBuffer(const AccountedBuffer&) = delete;
  AccountedBuffer& operator=(const AccountedBuffer&) = delete;

  float* data() const { return data_; }
  size_t size() const { return count_; }

 private:
  void reset();
  MemoryAccount* account_ = nullptr;
  float* data_ = nullptr;
  size_t count_ = 0;
};

}  // namespace trex::optim
