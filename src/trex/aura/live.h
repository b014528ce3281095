// The live evaluator: one candidate configuration through the kernel gate, then timed.
//
// The candidate is made the active tuning (for the kernel's "*" entry, so the gate's small odd
// shapes run it too, and for the target's shape class). Gate: the suite's check cases on a seed
// that changes with every candidate, then the target-shape case (poisoned outputs, inputs
// hashed, comparison with the reference, a second run bit-identical); the reference output at
// the target shape is computed once and replayed. Only a candidate that passes is timed: median
// of at least 5 calls and min_seconds after one warm-up; wall time, or with a one-thread pool the
// thread's CPU time (robust to other load on a shared machine). The tuning before is restored.
#pragma once

#include <memory>
#include <vector>

#include "trex/aura/search.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/kernel_suite.h"

namespace trex::aura {

class LiveEvaluator {
 public:
  LiveEvaluator(const TuneTarget& target, core::ThreadPool* pool, double min_seconds = 0.1);
  Measurement operator()(const Config& c);
  int evaluations() const { return count_; }

 private:
  TuneTarget target_;
  core::ThreadPool* pool_;
  double min_seconds_;
  kernels::KernelCase timed_;
  std::vector<std::vector<char>> ref_;  // reference outputs at the target shape
  int count_ = 0;
};

}  // namespace trex::aura
