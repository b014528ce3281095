#include "trex/core/trace.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>

#include "trex/util/atomic_file.h"

namespace trex::core {
namespace {

std::atomic<bool> g_enabled{false};

// The innermost active span of this thread (spans are RAII, so they close in reverse order).
thread_local TraceSpan* t_innermost = nullptr;
// The forward of the TraceForward::Scope this thread is in (nullptr: none).
thread_local TraceForward* t_forward = nullptr;

void atomic_add(std::atomic<double>& a, double v) {
  double cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}

// Each thread's events live in a buffer the registry owns, so a thread that exits leaves its
// spans behind for collect(). Only the owning thread appends; collect() and clear() take the
// buffer's lock, which the owner takes too (uncontended except while collecting).
struct ThreadBuffer {
  std::mutex mu;
  int thread = 0;
  std::vector<TraceEvent> events;
};

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<ThreadBuffer>> buffers;
  std::chrono::steady_clock::time_point epoch = std::chrono::steady_clock::now();
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: spans may close during exit
  return *r;
}

ThreadBuffer& this_thread_buffer() {
  thread_local ThreadBuffer* buffer = [] {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.buffers.push_back(std::make_unique<ThreadBuffer>());
    r.buffers.back()->thread = int(r.buffers.size()) - 1;
    return r.buffers.back().get();
  }();
  return *buffer;
}

}  // namespace

const char* to_string(TraceCategory c) {
  switch (c) {
    case TraceCategory::kGemm: return "gemm";
    case TraceCategory::kAttention: return "attention";
    case TraceCategory::kMoeDispatch: return "moe_dispatch";
    case TraceCategory::kElementwise: return "elementwise";
    case TraceCategory::kOptimizer: return "optimizer";
    case TraceCategory::kData: return "data";
    case TraceCategory::kOther: return "other";
    case TraceCategory::kStep: return "step";
  }
  return "other";
}

void trace_enable(bool on) { g_enabled.store(on, std::memory_order_relaxed); }
bool trace_enabled() { return g_enabled.load(std::memory_order_relaxed); }

int64_t trace_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              registry().epoch)
      .count();
}

int trace_thread_id() { return this_thread_buffer().thread; }

void trace_clear() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto& b : r.buffers) {
    std::lock_guard<std::mutex> block(b->mu);
    b->events.clear();
  }
}

void TraceSpan::begin(TraceCategory category, const char* name) {
  active_ = true;
  category_ = category;
  name_ = name;
  enclosing_ = t_innermost;
  t_innermost = this;
  begin_ns_ = trace_now_ns();
}

void TraceSpan::end() {
  int64_t end_ns = trace_now_ns();
  t_innermost = enclosing_;
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard<std::mutex> lock(b.mu);
  b.events.push_back(TraceEvent{category_, name_, begin_ns_, end_ns, b.thread, flops_, bytes_});
}

void trace_count_slow(double flops, double bytes) {
  if (TraceSpan* s = t_innermost) {
    s->flops_ += flops;
    s->bytes_ += bytes;
  } else if (TraceForward* f = t_forward) {
    atomic_add(f->flops_, flops);
    atomic_add(f->bytes_, bytes);
  }
}

TraceForward::TraceForward() {
  if (trace_enabled()) target_ = t_innermost;
}

TraceForward::~TraceForward() {
  // On the dispatching thread after the join: no task touches the totals any more, and the
  // target span is still open (it encloses this object's scope).
  if (target_) {
    target_->flops_ += flops_.load(std::memory_order_relaxed);
    target_->bytes_ += bytes_.load(std::memory_order_relaxed);
  }
}

TraceForward::Scope::Scope(TraceForward& forward) {
  if (!forward.target_) return;
  active_ = true;
  // The task starts with no span open on whichever thread runs it (the dispatching one too), so
  // its counts take the same path wherever it runs.
  saved_span_ = t_innermost;
  saved_forward_ = t_forward;
  t_innermost = nullptr;
  t_forward = &forward;
}

TraceForward::Scope::~Scope() {
  if (!active_) return;
  t_innermost = saved_span_;
  t_forward = saved_forward_;
}

void trace_record_step(int64_t step, int64_t begin_ns, int64_t end_ns) {
  if (!trace_enabled()) return;
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard<std::mutex> lock(b.mu);
  b.events.push_back(TraceEvent{TraceCategory::kStep, "ProfilerStep", begin_ns, end_ns, b.thread, 0, 0, step});
}

std::vector<TraceEvent> trace_collect() {
  std::vector<TraceEvent> all;
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    for (auto& b : r.buffers) {
      std::lock_guard<std::mutex> block(b->mu);
      all.insert(all.end(), b->events.begin(), b->events.end());
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const TraceEvent& a, const TraceEvent& b) {
    if (a.begin_ns != b.begin_ns) return a.begin_ns < b.begin_ns;
    if (a.thread != b.thread) return a.thread < b.thread;
    return a.end_ns > b.end_ns;  // the enclosing span first
  });
  return all;
}

void write_chrome_trace(const std::string& path, const std::vector<TraceEvent>& events,
                        const TraceMetadata& meta) {
  char line[640];
  // The keys PyTorch's profiler writes and Holistic Trace Analysis reads for the rank.
  std::snprintf(line, sizeof line,
                "{\"schemaVersion\":1,\"traceName\":\"trex\",\"displayTimeUnit\":\"ms\",\n"
                "\"distributedInfo\":{\"backend\":\"%s\",\"rank\":%d,\"world_size\":%d},\n"
                "\"traceEvents\":[\n",
                meta.backend.c_str(), meta.rank, meta.world_size);
  std::string out = line;
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    char name[64] = "";
    if (e.category == TraceCategory::kStep)
      std::snprintf(name, sizeof name, "ProfilerStep#%lld", static_cast<long long>(e.step));
    char args[160] = "";
    if (e.flops > 0 || e.bytes > 0)
      std::snprintf(args, sizeof args, ",\"args\":{\"flops\":%.17g,\"bytes\":%.17g}", e.flops, e.bytes);
    // Names are string literals from trex's own code: no characters that need escaping.
    std::snprintf(line, sizeof line,
                  "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,"
                  "\"pid\":%d,\"tid\":%d%s}%s\n",
                  e.category == TraceCategory::kStep ? name : e.name,
                  e.category == TraceCategory::kStep ? "user_annotation" : to_string(e.category),
                  double(e.begin_ns) / 1e3, double(e.end_ns - e.begin_ns) / 1e3, meta.rank + 1, e.thread,
                  args, i + 1 < events.size() ? "," : "");
    out += line;
  }
  out += "]}\n";
  write_file_atomic(path, out);
}

TraceSummary summarize_trace(const std::vector<TraceEvent>& events, int thread, int64_t begin_ns,
                             int64_t end_ns) {
  TraceSummary s;
  s.wall_s = double(std::max<int64_t>(0, end_ns - begin_ns)) / 1e9;
  // Events of one thread sorted by begin with enclosing spans first form a forest; a stack of
  // open spans gives each its parent, whose self time loses the child's duration.
  struct Open {
    int64_t end_ns;
    TraceCategory category;
  };
  std::vector<Open> stack;
  double self[kTraceCategories] = {};
  for (const TraceEvent& e : events) {
    if (e.thread != thread || int(e.category) >= kTraceCategories) continue;
    int64_t b = std::max(e.begin_ns, begin_ns), en = std::min(e.end_ns, end_ns);
    if (en <= b) continue;
    while (!stack.empty() && stack.back().end_ns <= e.begin_ns) stack.pop_back();
    double d = double(en - b) / 1e9;
    self[int(e.category)] += d;
    if (!stack.empty()) self[int(stack.back().category)] -= d;
    stack.push_back({e.end_ns, e.category});
  }
  double covered = 0;
  for (int c = 0; c < kTraceCategories; ++c) {
    s.seconds[c] = std::max(0.0, self[c]);
    covered += s.seconds[c];
  }
  s.idle_s = std::max(0.0, s.wall_s - covered);
  return s;
}

std::string TraceSummary::to_string() const {
  std::string out;
  char line[128];
  auto add = [&](const char* name, double sec) {
    std::snprintf(line, sizeof line, "  %-13s %9.3f s  %5.1f%%\n", name, sec,
                  wall_s > 0 ? 100.0 * sec / wall_s : 0.0);
    out += line;
  };
  for (int c = 0; c < kTraceCategories; ++c) add(core::to_string(TraceCategory(c)), seconds[c]);
  add("idle", idle_s);
  return out;
}

}  // namespace trex::core
