// The live evaluator: one candidate configuration through the kernel gate, then timed.
//
// The candidate is made the active tuning (for the kernel's "*" entry, so the gate's small odd
// shapes run it too, and for the target's shape class). Gate: the suite's check cases on a seed
// that changes with every candidate, then the target-shape case (poisoned outputs, inputs
// hashed, comparison with the reference, a second run bit-identical); the reference output at
// the target shape is computed once and replayed. Only a candidate that passes is timed: at least
// 5 calls and min_seconds after one warm-up; wall time, or with a one-thread pool the thread's CPU
// time (robust to other load on a shared machine). The candidate's time is the fastest of its
// calls (Timing::kMinimum) or their median (kMedian); kAuto, the default, takes the fastest on the
// thread CPU clock and the median on the wall clock. Why: on one thread other work only ever adds
// time to a call (a burst on the other core slows it through the shared L3 and memory), so the
// fastest call is the estimate a burst disturbs least; measured on two threads' wall time the
// fastest was not cleaner than the median (bench/results/aura_search.md, session 8). The tuning
// before is restored.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trex/aura/search.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/kernel_suite.h"

namespace trex::aura {

enum class Timing { kMedian, kMinimum, kAuto };
const char* to_string(Timing t);
// "median", "min" or "auto"; anything else throws InputError naming `field`.
Timing parse_timing(const std::string& text, const std::string& field);

class LiveEvaluator {
 public:
  LiveEvaluator(const TuneTarget& target, core::ThreadPool* pool, double min_seconds = 0.1,
                Timing timing = Timing::kAuto);
  Measurement operator()(const Config& c);
  int evaluations() const { return count_; }

 private:
  TuneTarget target_;
  core::ThreadPool* pool_;
  double min_seconds_;
  Timing timing_;
  kernels::KernelCase timed_;
  std::vector<std::vector<char>> ref_;  // reference outputs at the target shape
  int count_ = 0;
};

}  // namespace trex::aura
