#include "trex/dist/shared_row_exchange.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>

#include "trex/core/trace.h"
#include "trex/dist/request_wait.h"
#include "trex/dist/session.h"

namespace trex::dist {
namespace {

// A region: the sequence word alone in its cache line, then the two counts slots (ranks x per
// int64 each), the two row-layout slots (ranks + 1 row offsets and the row width), then the two
// rows slots (data floats each), each part starting on a cache line.
constexpr int64_t kLine = 64;
int64_t up(int64_t bytes) { return (bytes + kLine - 1) / kLine * kLine; }
int64_t counts_bytes(int ranks, int64_t per) { return up(8 * ranks * per); }
int64_t displs_bytes(int ranks) { return up(8 * (ranks + 2)); }
int64_t data_offset(int ranks, int64_t per) { return kLine + 2 * counts_bytes(ranks, per) + 2 * displs_bytes(ranks); }

}  // namespace

std::unique_ptr<SharedRowExchange> SharedRowExchange::create(const Communicator& comm, int shards) {
  if (comm.size() == 1) return nullptr;
  std::unique_ptr<SharedWindow> w = SharedWindow::create(comm, data_offset(comm.size(), 0));
  if (!w) return nullptr;
  std::unique_ptr<SharedRowExchange> ex(new SharedRowExchange(comm, shards));
  ex->window_ = std::move(w);
  ex->publish(0);
  ex->window_->sync("expert rows window");
  return ex;
}

uint64_t* SharedRowExchange::seq(int q) const { return static_cast<uint64_t*>(window_->region(q)); }
int64_t* SharedRowExchange::counts(int q, int64_t slot) const {
  return reinterpret_cast<int64_t*>(static_cast<char*>(window_->region(q)) + kLine +
                                    slot * counts_bytes(ranks_, per_cap_));
}
int64_t* SharedRowExchange::displs(int q, int64_t slot) const {
  return reinterpret_cast<int64_t*>(static_cast<char*>(window_->region(q)) + kLine +
                                    2 * counts_bytes(ranks_, per_cap_) + slot * displs_bytes(ranks_));
}
float* SharedRowExchange::data(int q, int64_t slot) const {
  return reinterpret_cast<float*>(static_cast<char*>(window_->region(q)) + data_offset(ranks_, per_cap_)) +
         slot * data_cap_;
}

void SharedRowExchange::publish(uint64_t n) { std::atomic_ref<uint64_t>(*seq(rank_)).store(n, std::memory_order_release); }
bool SharedRowExchange::published(int q, uint64_t n) const {
  return std::atomic_ref<uint64_t>(*seq(q)).load(std::memory_order_acquire) >= n;
}

void SharedRowExchange::resize(int64_t per, int64_t data) {
  window_->sync("expert rows window");  // every rank past its reads of the old window
  window_.reset();
  per_cap_ = per;
  data_cap_ = data;
  window_ = SharedWindow::create(*comm_, data_offset(ranks_, per_cap_) + 2 * data_cap_ * int64_t(sizeof(float)));
  if (!window_) throw std::runtime_error("dist: the expert group's shared-memory window could not be re-created");
  // Fault every page in now (this rank's by writing, the peers' by reading), not inside the
  // exchanges that first use them.
  const int64_t bytes = data_offset(ranks_, per_cap_) + 2 * data_cap_ * int64_t(sizeof(float));
  std::memset(window_->region(rank_), 0, size_t(bytes));
  window_->sync("expert rows window");
  volatile char sink = 0;
  for (int q = 0; q < ranks_; ++q)
    for (int64_t b = 0; b < bytes; b += 4096) sink = sink + static_cast<const char*>(window_->region(q))[b];
  publish(ops_);
  window_->sync("expert rows window");
}

void SharedRowExchange::exchange_counts(const int64_t* send, int64_t* recv, int per, int64_t width) {
  if (pending_) throw std::logic_error("SharedRowExchange: counts exchanged while rows are in flight");
  if (per > per_cap_) resize(per, data_cap_);  // every rank has the same per
  const uint64_t n = ops_;
  const int64_t slot = int64_t(n % 2);
  std::memcpy(counts(rank_, slot), send, sizeof(int64_t) * size_t(ranks_) * size_t(per));
  publish(n + 1);
  {
    WatchdogScope w("expert counts (shared memory)");
    wait_until([&] {
      for (int q = 0; q < ranks_; ++q)
        if (!published(q, n + 1)) return false;
      return true;
    });
  }
  // Every rank reads every rank's counts, so all of them size the rows slots alike: the most
  // rows any rank sends in one exchange of this layer (its routed rows out, or the rows it
  // received, going back), at the widest row.
  std::vector<int64_t> out(size_t(ranks_), 0), in(size_t(ranks_), 0);
  for (int q = 0; q < ranks_; ++q) {
    const int64_t* c = counts(q, slot);
    for (int p = 0; p < ranks_; ++p)
      for (int j = 0; j < per; ++j) {
        out[size_t(q)] += c[p * per + j];
        in[size_t(p)] += c[p * per + j];
      }
    if (q != rank_) std::memcpy(recv + int64_t(q) * per, c + int64_t(rank_) * per, sizeof(int64_t) * size_t(per));
  }
  std::memcpy(recv + int64_t(rank_) * per, send + int64_t(rank_) * per, sizeof(int64_t) * size_t(per));
  ops_ = n + 1;
  int64_t rows = 0;
  for (int q = 0; q < ranks_; ++q) rows = std::max({rows, out[size_t(q)], in[size_t(q)]});
  // A quarter more than asked, so that routing that shifts a little does not resize each time.
  if (rows * width > data_cap_) resize(per_cap_, (rows * width + rows * width / 4 + 15) / 16 * 16);
}

void SharedRowExchange::start_rows(const float* send, const int64_t* send_rows, float* recv, const int64_t* recv_rows,
                                   int64_t width) {
  TREX_TRACE(kMoeDispatch, "dist.rows.post");
  if (pending_) throw std::logic_error("SharedRowExchange: an exchange is already in flight");
  const uint64_t n = ops_;
  const int64_t slot = int64_t(n % 2);
  int64_t* d = displs(rank_, slot);
  d[0] = 0;
  for (int q = 0; q < ranks_; ++q) d[q + 1] = d[q] + send_rows[q];
  d[ranks_ + 1] = width;
  if (d[ranks_] * width > data_cap_)
    throw std::logic_error("SharedRowExchange: rows wider or more than the counts exchange announced");
  core::trace_count(0, double(d[ranks_]) * double(width) * sizeof(float));
  // The peers' rows into this rank's slot (at their offsets in send), unless the caller packed
  // them there (send_slot); this rank's own straight into recv.
  float* mine = data(rank_, slot);
  if (send != mine)
    for (int q = 0; q < ranks_; ++q)
      if (q != rank_ && send_rows[q] > 0)
        std::memcpy(mine + d[q] * width, send + d[q] * width, sizeof(float) * size_t(send_rows[q] * width));
  recv_rows_.assign(recv_rows, recv_rows + ranks_);
  recv_displs_.assign(size_t(ranks_) + 1, 0);
  for (int q = 0; q < ranks_; ++q) recv_displs_[size_t(q) + 1] = recv_displs_[size_t(q)] + recv_rows[q];
  if (send_rows[rank_] != recv_rows[rank_])
    throw std::logic_error("SharedRowExchange: this rank's rows to itself differ from those it expects");
  std::memcpy(recv + recv_displs_[size_t(rank_)] * width, send + d[rank_] * width,
              sizeof(float) * size_t(send_rows[rank_] * width));
  recv_ = recv;
  width_ = width;
  done_.assign(size_t(ranks_), 0);
  done_[size_t(rank_)] = 1;
  left_ = ranks_ - 1;
  pending_ = true;
  ops_ = n + 1;
  publish(n + 1);
}

float* SharedRowExchange::send_slot(const int64_t* send_rows, int64_t width) {
  if (pending_) throw std::logic_error("SharedRowExchange: send slot asked for while rows are in flight");
  int64_t rows = 0;
  for (int q = 0; q < ranks_; ++q) rows += send_rows[q];
  // Slot ops_ % 2 is free: this rank's last use of it was operation ops_ - 2, which every peer
  // finished reading before it published ops_ (header comment), and this rank saw that before
  // completing operation ops_ - 1.
  if (rows * width > data_cap_) return nullptr;
  return data(rank_, int64_t(ops_ % 2));
}

bool SharedRowExchange::copy_arrived() {
  const uint64_t n = ops_ - 1;
  const int64_t slot = int64_t(n % 2);
  for (int q = 0; q < ranks_; ++q) {
    if (done_[size_t(q)] || !published(q, n + 1)) continue;
    const int64_t* d = displs(q, slot);
    if (d[ranks_ + 1] != width_ || d[rank_ + 1] - d[rank_] != recv_rows_[size_t(q)])
      throw std::logic_error("SharedRowExchange: a peer sent rows of another width or count than expected");
    std::memcpy(recv_ + recv_displs_[size_t(q)] * width_, data(q, slot) + d[rank_] * width_,
                sizeof(float) * size_t(recv_rows_[size_t(q)] * width_));
    done_[size_t(q)] = 1;
    --left_;
  }
  return left_ == 0;
}

void SharedRowExchange::progress_rows() {
  if (pending_) copy_arrived();
}

void SharedRowExchange::finish_rows() {
  TREX_TRACE(kMoeDispatch, "dist.rows.wait");
  if (!pending_) return;
  if (!copy_arrived()) {
    WatchdogScope w("expert rows (shared memory)");
    wait_until([&] { return copy_arrived(); });
  }
  pending_ = false;
}

}  // namespace trex::dist
