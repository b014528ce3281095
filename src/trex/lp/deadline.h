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
  // The limit to hand the next phase (a solver call, a helper process) in the "0: none"
  // convention: 0 when unlimited, else what is left but at least 1 ms, because a limit of 0
  // would read as no limit at all.
  double phase_limit() const { return unlimited() ? 0 : std::max(left(), 1e-3); }

 private:
  std::chrono::steady_clock::time_point t0_;
  double limit_;
};

}  // namespace trex::lp
