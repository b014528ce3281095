// The correctness gate of the kernel suite (see kernel_suite.h).
#include "trex/kernels/kernel_suite.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

// Inlined xxHash's AVX-512 path trips GCC 12's false -Wmaybe-uninitialized inside its own
// intrinsics headers (GCC bug 105593); the warning is about the compiler's headers, not ours.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#define XXH_INLINE_ALL
#include <xxhash.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include "trex/core/bf16.h"

namespace trex::kernels {

size_t SuiteBuffer::bytes() const {
  return size_t(count) * (dtype == SuiteDtype::kBf16 ? 2 : 4);
}

namespace {

double value(const SuiteBuffer& b, int64_t i) {
  switch (b.dtype) {
    case SuiteDtype::kF32: return static_cast<const float*>(b.data)[i];
    case SuiteDtype::kBf16: return core::to_float(static_cast<const core::bf16*>(b.data)[i]);
    case SuiteDtype::kI32: return static_cast<const int32_t*>(b.data)[i];
  }
  return 0;
}

// NaN in every element (int32 outputs get a value no kernel writes), or the initial value of an
// output the kernel accumulates into.
void poison(SuiteBuffer& b) {
  if (b.init) {
    std::memcpy(b.data, b.init, b.bytes());
    return;
  }
  for (int64_t i = 0; i < b.count; ++i) {
    switch (b.dtype) {
      case SuiteDtype::kF32:
        static_cast<float*>(b.data)[i] = std::numeric_limits<float>::quiet_NaN();
        break;
      case SuiteDtype::kBf16:
        static_cast<core::bf16*>(b.data)[i] = core::to_bf16(std::numeric_limits<float>::quiet_NaN());
        break;
      case SuiteDtype::kI32:
        static_cast<int32_t*>(b.data)[i] = std::numeric_limits<int32_t>::min();
        break;
    }
  }
}

bool poisoned(const SuiteBuffer& b, int64_t i) {
  if (b.init) return false;
  if (b.dtype == SuiteDtype::kI32) return static_cast<const int32_t*>(b.data)[i] == std::numeric_limits<int32_t>::min();
  return std::isnan(value(b, i));
}

std::vector<uint64_t> hashes(const std::vector<SuiteBuffer>& bufs) {
  std::vector<uint64_t> h;
  for (const SuiteBuffer& b : bufs) h.push_back(XXH3_64bits(b.data, b.bytes()));
  return h;
}

}  // namespace

CheckResult check_case(KernelCase& c) {
  CheckResult r;
  auto fail = [&r](const std::string& m) {
    if (r.message.empty()) r.message = m;
  };
  const std::vector<uint64_t> before = hashes(c.inputs);
  for (SuiteBuffer& b : c.outputs) poison(b);
  for (SuiteBuffer& b : c.ref_outputs) poison(b);
  c.fused();
  if (hashes(c.inputs) != before) {
    r.inputs_unchanged = false;
    fail("the fused kernel changed an input");
  }
  c.ref();
  if (hashes(c.inputs) != before) {
    r.inputs_unchanged = false;
    fail("the reference changed an input");
  }
  for (size_t o = 0; o < c.outputs.size(); ++o) {
    const SuiteBuffer& f = c.outputs[o];
    const SuiteBuffer& g = c.ref_outputs[o];
    for (int64_t i = 0; i < f.count; ++i) {
      if (poisoned(f, i)) {
        r.outputs_written = false;
        fail(f.name + "[" + std::to_string(i) + "] not written");
        break;
      }
      if (!f.compare) continue;
      double a = value(f, i), b = value(g, i);
      if (a == b) continue;  // equal values, infinities included
      double e = std::fabs(a - b) / (f.tol * (1 + std::fabs(b)));
      if (!(e <= r.worst)) {  // NaN counts as the worst
        r.worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
        r.worst_output = f.name + "[" + std::to_string(i) + "]";
      }
    }
  }
  if (r.worst > 1) fail(r.worst_output + " differs from the reference beyond tolerance");
  // Determinism: a second run from poisoned outputs gives the same bytes.
  std::vector<std::vector<char>> first;
  for (const SuiteBuffer& b : c.outputs)
    first.emplace_back(static_cast<const char*>(b.data), static_cast<const char*>(b.data) + b.bytes());
  for (SuiteBuffer& b : c.outputs) poison(b);
  c.fused();
  for (size_t o = 0; o < c.outputs.size(); ++o)
    if (c.outputs[o].bytes() > 0 &&
        std::memcmp(first[o].data(), c.outputs[o].data, c.outputs[o].bytes()) != 0) {
      r.deterministic = false;
      fail(c.outputs[o].name + " differs between two runs");
    }
  r.passed = r.message.empty();
  return r;
}

CaseTiming time_call(const std::function<void()>& call, double min_seconds, int min_runs,
                     int max_runs, bool warmup, TimeClock clock, TimeStat stat) {
  auto now = [clock] {
    if (clock == TimeClock::kThreadCpu) {
      timespec ts{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  if (warmup) call();  // page faults of first-touched outputs, caches, the pool's threads
  std::vector<double> t;
  double total = 0;
  while (int(t.size()) < max_runs && (int(t.size()) < min_runs || total < min_seconds)) {
    const double t0 = now();
    call();
    const double s = now() - t0;
    t.push_back(s);
    total += s;
  }
  std::sort(t.begin(), t.end());
  size_t m = t.size();
  CaseTiming r;
  r.runs = int(m);
  r.seconds = stat == TimeStat::kFastest ? t.front() : m % 2 ? t[m / 2] : 0.5 * (t[m / 2 - 1] + t[m / 2]);
  return r;
}

}  // namespace trex::kernels
