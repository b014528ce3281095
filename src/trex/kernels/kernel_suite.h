// The kernel suite behind `trex kernels check` and `trex kernels bench`: every fused kernel as a
// runnable case beside its eager reference, with the buffers a correctness gate needs.
//
// A KernelCase owns seeded inputs, the fused kernel's outputs and the reference's outputs, and
// two closures that run the fused kernel and the reference. The gate (check_case) follows
// spec/hardware-and-kernels.md section 8: outputs are poisoned with NaN before each run (or, for
// outputs a kernel accumulates into, reset to their initial values), every input is hashed
// (XXH3) before and after each run, fused and reference outputs are compared with the case's
// per-output tolerance |fused - ref| <= tol (1 + |ref|), and the fused kernel is run a second
// time to check that it is bit-identical. Benchmarks validate a case the same way before timing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trex/core/thread_pool.h"

namespace trex::kernels {

enum class SuiteDtype { kF32, kBf16, kI32 };

// A view of one buffer a case owns.
struct SuiteBuffer {
  std::string name;
  SuiteDtype dtype = SuiteDtype::kF32;
  void* data = nullptr;
  int64_t count = 0;        // elements
  double tol = 0;           // outputs: the comparison tolerance (atol = rtol)
  const void* init = nullptr;  // outputs a kernel adds into: the value to reset to (not poisoned)
  bool compare = true;         // false: only checked for being written (e.g. top-k indices,
                               // whose order may differ at near-ties; their scores are compared)
  size_t bytes() const;
};

struct KernelCase {
  std::string kernel;  // e.g. "rmsnorm.fwd"
  std::string dtype;   // "fp32" or "bf16" (storage)
  std::string shape;   // human-readable
  double bytes = 0;    // minimum memory traffic of one call (each input read, each output written once)
  double flops = 0;    // contraction FLOPs of one call (2 per multiply-add; 0 for elementwise)
  std::vector<SuiteBuffer> inputs, outputs, ref_outputs;  // outputs[i] pairs with ref_outputs[i]
  std::function<void()> fused, ref;
  std::shared_ptr<void> storage;  // keeps every buffer alive
};

enum class SuiteSize { kCheck, kQuick, kFull };

// Kernel names in suite order (gemm, rmsnorm, swiglu, rope, cross_entropy, kv_compress,
// sparse_attention, indexer, mhc, adamw; forward and backward as separate names).
const std::vector<std::string>& suite_kernels();

// The cases of one kernel at a size: kCheck gives several small shapes (odd sizes, tails) for
// the given seed, kQuick and kFull one benchmark shape (kFull is the shape the targets are
// stated for; kQuick takes well under a second). Throws std::invalid_argument for an unknown name.
std::vector<KernelCase> make_cases(const std::string& kernel, SuiteSize size, uint32_t seed,
                                   core::ThreadPool* pool = nullptr);

// The cases of one kernel at a chosen shape (the tuner's target): gemm {m, n, k}; rmsnorm.*,
// swiglu.* and cross_entropy {rows, cols}; rope.fwd {tokens, heads, head_dim} (rotary on
// min(64, head_dim) dims); kv_compress.* {tokens, head_dim, ratio}; sparse_attention.*
// {tokens, heads, head_dim[, ratio]} (window 64; ratio 4, the default: top-min(64, tokens/4) of
// the ratio-4 entries; 128: every visible ratio-128 entry; 0: the window only); mhc.*
// {tokens, streams, d} (bf16). fp32 then bf16 where the kernel has both. Throws
// std::invalid_argument for another kernel, a wrong number of dimensions or one below 1.
std::vector<KernelCase> make_cases_at(const std::string& kernel, const std::vector<int64_t>& dims,
                                      uint32_t seed, core::ThreadPool* pool = nullptr);

struct CheckResult {
  bool passed = false;
  double worst = 0;          // max over outputs and elements of |fused - ref| / (tol (1 + |ref|))
  std::string worst_output;  // where `worst` was found
  bool inputs_unchanged = true;
  bool outputs_written = true;  // no poison left in a fused output
  bool deterministic = true;    // a second fused run gave the same bytes
  std::string message;          // the first problem, empty when passed
};

// The gate above for one case.
CheckResult check_case(KernelCase& c);

// Median wall time of one call, after one warm-up call (unless warmup is false: the caller has
// just run it): at least min_runs calls and, within max_runs, until min_seconds have passed.
// All worker threads have joined when a call returns. `clock` kThreadCpu times the calling
// thread's CPU time instead (one-thread calls: other processes disturb it far less than wall
// time), `stat` kFastest reports the fastest call (a burst of other load only ever adds time);
// aura's live evaluator uses both (aura/live.h).
struct CaseTiming {
  double seconds = 0;
  int runs = 0;
};
enum class TimeClock { kWall, kThreadCpu };
enum class TimeStat { kMedian, kFastest };
CaseTiming time_call(const std::function<void()>& call, double min_seconds, int min_runs,
                     int max_runs, bool warmup = true, TimeClock clock = TimeClock::kWall,
                     TimeStat stat = TimeStat::kMedian);

}  // namespace trex::kernels
