#include "trex/optim/memory_account.h"

#include <utility>

#include "trex/core/arena.h"

namespace trex::optim {

void MemoryAccount::charge(size_t bytes) {
  size_t now = current_.fetch_add(bytes) + bytes;
  size_t p = peak_.load();
  while (now > p && !peak_.compare_exchange_weak(p, now)) {
  }
}

void MemoryAccount::release(size_t bytes) { current_.fetch_sub(bytes); }

AccountedBuffer::AccountedBuffer(MemoryAccount* account, size_t count)
    : account_(account),
      data_(static_cast<float*>(core::aligned_alloc_bytes(count * sizeof(float), 4096))),
      count_(count) {
  if (account_) account_->charge(count_ * sizeof(float));
}

AccountedBuffer::~AccountedBuffer() { reset(); }

AccountedBuffer::AccountedBuffer(AccountedBuffer&& o) noexcept
    : account_(std::exchange(o.account_, nullptr)),
      data_(std::exchange(o.data_, nullptr)),
      count_(std::exchange(o.count_, 0)) {}

AccountedBuffer& AccountedBuffer::operator=(AccountedBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    account_ = std::exchange(o.account_, nullptr);
    data_ = std::exchange(o.data_, nullptr);
    count_ = std::exchange(o.count_, 0);
  }
  return *this;
}

void AccountedBuffer::reset() {
  if (!data_) return;
  core::aligned_free(data_);
  if (account_) account_->release(count_ * sizeof(float));
  data_ = nullptr;
  count_ = 0;
}

}  // namespace trex::optim
