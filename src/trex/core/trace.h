// Operator tracing: spans with a category, recorded per thread, written as Chrome trace JSON and
// summarised as time per category.
//
// Instrumented code opens a Span (RAII) around an operator. When tracing is off (the default)
// a Span costs one relaxed atomic load. When on, each thread appends {category, name, begin,
// end} to its own buffer (no lock on the hot path); collect() gathers every thread's spans.
// Spans nest: a span's "self time" is its duration minus the spans it encloses on the same
// thread, and the category summary adds self times, so nothing is counted twice.
//
// Categories are the ones a training step's time is reported in (issue 6): GEMM, attention,
// MoE dispatch, elementwise, optimizer, data; "idle" is wall time no span covers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trex::core {

enum class TraceCategory : uint8_t {
  kGemm = 0,
  kAttention,
  kMoeDispatch,
  kElementwise,
  kOptimizer,
  kData,
  kOther,
};
inline constexpr int kTraceCategories = 7;
const char* to_string(TraceCategory c);  // "gemm", "attention", "moe_dispatch", ...

struct TraceEvent {
  TraceCategory category;
  const char* name;   // a string literal (never freed)
  int64_t begin_ns;   // steady clock, since the process's trace epoch
  int64_t end_ns;
  int thread;         // small integer per OS thread, in order of first span
};

// Turns recording on or off for every thread. Turning it on clears nothing; see trace_clear().
void trace_enable(bool on);
bool trace_enabled();
// Drops every recorded event.
void trace_clear();
// Nanoseconds on the trace clock.
int64_t trace_now_ns();

// Every event recorded so far, ordered by (begin, thread).
std::vector<TraceEvent> trace_collect();

// Writes events as Chrome trace JSON ("X" complete events, microseconds) to `path`, atomically.
// Throws InputError naming the path when it cannot be written.
void write_chrome_trace(const std::string& path, const std::vector<TraceEvent>& events);

// Self time per category over [begin_ns, end_ns) of one thread's wall time: seconds[c] for each
// category, and idle = wall - sum (never below 0). Threads other than `thread` are ignored, so
// the summary answers "where did the step's wall time go" for the thread that drives it.
struct TraceSummary {
  double wall_s = 0;
  double seconds[kTraceCategories] = {};
  double idle_s = 0;
  std::string to_string() const;  // one line per category with seconds and percent
};
TraceSummary summarize_trace(const std::vector<TraceEvent>& events, int thread, int64_t begin_ns,
                             int64_t end_ns);
// The calling thread's trace thread id.
int trace_thread_id();

class TraceSpan {
 public:
  TraceSpan(TraceCategory category, const char* name) {
    if (trace_enabled()) begin(category, name);
  }
  ~TraceSpan() {
    if (active_) end();
  }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

 private:
  void begin(TraceCategory category, const char* name);
  void end();
  bool active_ = false;
  TraceCategory category_ = TraceCategory::kOther;
  const char* name_ = nullptr;
  int64_t begin_ns_ = 0;
};

}  // namespace trex::core

// TREX_TRACE(kGemm, "wq_a") opens a span until the end of the enclosing scope.
#define TREX_TRACE_CONCAT2(a, b) a##b
#define TREX_TRACE_CONCAT(a, b) TREX_TRACE_CONCAT2(a, b)
#define TREX_TRACE(category, name)                                              \
  ::trex::core::TraceSpan TREX_TRACE_CONCAT(trex_trace_span_, __LINE__)(        \
      ::trex::core::TraceCategory::category, name)
