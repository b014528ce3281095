// One wall-clock budget for a whole solve call: every phase (presolve checks, the LP
// relaxation, branch and bound, a re-solve, a feasibility search) gets what is left of it,
// never a fresh limit of its own. Wall clock, not process CPU time: with several worker
// threads CPU time runs faster than the clock and would stop the call early.
#pragma once

#include <algorithm>
#include <chrono>

#include "trex/lp/model.h"

namespace trex::lp {

class Deadline {
 public:
  // limit_s <= 0: no limit.
  explicit Deadline(double limit_s) : t0_(std::chrono::steady_clock::now()), limit_(limit_s) {}
  bool unlimited() const { return !(limit_ > 0); }
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  // Seconds left (kInf when unlimited, 0 once passed).
  double left() const { return unlimited() ? kInf : std::max(0.0, limit_ - elapsed()); }
  bool passed() const { return !unlimited() && elapsed() >= limit_; }

 private:
  std::chrono::steady_clock::time_point t0_;
  double limit_;
};

}  // namespace trex::lp
