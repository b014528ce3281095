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
//
// Work counts: a kernel calls trace_count(flops, bytes) and the counts land on the innermost
// span open on the calling thread, so `trex profile analyze` can place each operator on the
// roofline. Step spans (trace_record_step) mark training steps; the Chrome trace names them
// "ProfilerStep#N" and carries `distributedInfo`, as PyTorch's profiler does, so the trace opens
// in Perfetto and Holistic Trace Analysis (issue 15).
#pragma once

#include <atomic>
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
  kStep,  // a training step (ProfilerStep#N): a frame around the work, not a kind of work
};
// The categories of work (kStep is not one: summaries skip it).
inline constexpr int kTraceCategories = 7;
const char* to_string(TraceCategory c);  // "gemm", "attention", "moe_dispatch", ..., "step"

struct TraceEvent {
  TraceCategory category;
  const char* name;   // a string literal (never freed)
  int64_t begin_ns;   // steady clock, since the process's trace epoch
  int64_t end_ns;
  int thread;         // small integer per OS thread, in order of first span
  double flops = 0;   // work counted by trace_count() while this span was innermost (0: none)
  double bytes = 0;   // bytes moved to and from memory, counted the same way
  int64_t step = -1;  // kStep events: the step number
};

// Turns recording on or off for every thread. Turning it on clears nothing; see trace_clear().
void trace_enable(bool on);
bool trace_enabled();
// Drops every recorded event.
void trace_clear();
// Nanoseconds on the trace clock.
int64_t trace_now_ns();

// Adds a kernel's floating-point operations and memory bytes to the innermost span open on the
// calling thread, or, in a TraceForward::Scope with no span opened inside it, to the forward.
// Costs one relaxed load when tracing is off; does nothing when there is neither.
void trace_count_slow(double flops, double bytes);
inline void trace_count(double flops, double bytes);

// Work done on other threads for the span open where it was dispatched. Spans and counts are
// per thread, so a kernel run as a task on a pool worker (which has no span open) would lose its
// counts; the dispatching thread creates a TraceForward before the parallel job, every task opens
// a TraceForward::Scope, and counts made in a task outside any span the task opens itself go to
// the forward (atomically: tasks run concurrently). The destructor, on the dispatching thread
// after the join, adds them to the span that was innermost at construction. Spans a task opens
// keep their own counts, as anywhere. Costs one relaxed load per object when tracing is off.
class TraceSpan;
class TraceForward {
 public:
  TraceForward();
  ~TraceForward();
  TraceForward(const TraceForward&) = delete;
  TraceForward& operator=(const TraceForward&) = delete;

  class Scope {
   public:
    explicit Scope(TraceForward& forward);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    bool active_ = false;
    TraceSpan* saved_span_ = nullptr;
    TraceForward* saved_forward_ = nullptr;
  };

 private:
  friend void trace_count_slow(double flops, double bytes);
  TraceSpan* target_ = nullptr;  // null: tracing off or no span open, nothing to forward
  std::atomic<double> flops_{0}, bytes_{0};
};

// Records training step `step` as the span [begin_ns, end_ns) of the calling thread.
void trace_record_step(int64_t step, int64_t begin_ns, int64_t end_ns);

// Every event recorded so far, ordered by (begin, thread).
std::vector<TraceEvent> trace_collect();

// Who wrote a trace, for tools that merge the traces of a distributed run (HTA).
struct TraceMetadata {
  int rank = 0;
  int world_size = 1;
  std::string backend = "none";  // "mpi" when the run is distributed
};

// Writes events as Chrome trace JSON ("X" complete events, microseconds) to `path`, atomically,
// with `distributedInfo` from `meta`. Spans with work counts carry args {"flops", "bytes"};
// step events are "ProfilerStep#N" of category "user_annotation". Throws InputError naming the
// path when it cannot be written.
void write_chrome_trace(const std::string& path, const std::vector<TraceEvent>& events,
                        const TraceMetadata& meta = {});

// Self time per category over [begin_ns, end_ns) of one thread's wall time: seconds[c] for each
// category, and idle = wall - sum (never below 0); step events are skipped. Threads other than `thread` are ignored, so
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
  friend void trace_count_slow(double flops, double bytes);
  friend class TraceForward;
  void begin(TraceCategory category, const char* name);
  void end();
  bool active_ = false;
  TraceCategory category_ = TraceCategory::kOther;
  const char* name_ = nullptr;
  int64_t begin_ns_ = 0;
  double flops_ = 0, bytes_ = 0;
  TraceSpan* enclosing_ = nullptr;  // the span open on this thread when this one began
};

inline void trace_count(double flops, double bytes) {
  if (trace_enabled()) trace_count_slow(flops, bytes);
}

}  // namespace trex::core

// TREX_TRACE(kGemm, "wq_a") opens a span until the end of the enclosing scope.
#define TREX_TRACE_CONCAT2(a, b) a##b
#define TREX_TRACE_CONCAT(a, b) TREX_TRACE_CONCAT2(a, b)
#define TREX_TRACE(category, name)                                              \
  ::trex::core::TraceSpan TREX_TRACE_CONCAT(trex_trace_span_, __LINE__)(        \
      ::trex::core::TraceCategory::category, name)
