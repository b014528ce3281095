// Work items of one phase of a decoding step, shared by the step's lanes (threads) with an owner
// for each item: lane t takes its own segment's items first, front to back, then whatever is
// left of the other lanes' segments. So a lane reads the same weights step after step (the same
// experts, the same panels of the head), which stay in its core's caches: the two cores of the
// session machine share no cache (a line written or last read on one costs the other ~390 ns,
// issue 15's GEMM notes), and with the items taken from one shared list in turn each core read
// a different half of the weights every step. A lane the scheduler holds back still leaves its
// remaining items to the others.
//
// Each segment's cursor sits on a cache line of its own: a lane's claims touch only its own line
// until it steals.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

namespace trex::model {

class LaneWork {
 public:
  // Lane t of `lanes` owns items [begin(t), begin(t + 1)) of n; every cursor back to the start.
  // Call before the lanes of a step start (not while they claim).
  void reset(int lanes, int n) {
    if (lanes > cap_) {
      cursors_ = std::make_unique<Cursor[]>(size_t(lanes));
      cap_ = lanes;
    }
    lanes_ = lanes;
    n_ = n;
    for (int t = 0; t < lanes; ++t) cursors_[size_t(t)].next.store(0, std::memory_order_relaxed);
  }

  int lanes() const { return lanes_; }
  int items() const { return n_; }
  // The first item of lane t's segment (begin(lanes()) = items()).
  int begin(int t) const { return int(int64_t(t) * n_ / lanes_); }

  // The next item of lane t's own segment, or -1 when it is all taken.
  int take_own(int t) { return take_from(t); }

  // The next item for lane t: its own segment's, else the next one left in the other segments
  // (t + 1, t + 2, ... in turn); -1 when every item is taken.
  int take(int t) {
    for (int k = 0; k < lanes_; ++k) {
      const int i = take_from((t + k) % lanes_);
      if (i >= 0) return i;
    }
    return -1;
  }

 private:
  int take_from(int s) {
    const int b = begin(s), e = begin(s + 1);
    std::atomic<int>& c = cursors_[size_t(s)].next;
    // A cursor past its segment's end stays there (read first, so a drained segment costs no
    // write to its owner's line).
    if (b + c.load(std::memory_order_relaxed) >= e) return -1;
    const int k = c.fetch_add(1, std::memory_order_relaxed);
    return b + k < e ? b + k : -1;
  }

  struct alignas(64) Cursor {
    std::atomic<int> next{0};
  };
  std::unique_ptr<Cursor[]> cursors_;
  int cap_ = 0, lanes_ = 1, n_ = 0;
};

}  // namespace trex::model
