// Chrome trace JSON: trex's own traces and PyTorch/Kineto's (see trace_reader.h).
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trex/profile/timeline.h"
#include "trex/profile/trace_reader.h"
#include "trex/util/error.h"

namespace trex::profile {
namespace {

using json = nlohmann::json;

// A complete ("X") event.
struct Span {
  std::string name, cat;
  double ts = 0, dur = 0;
  std::string thread;  // "pid/tid"
  double flops = 0, bytes = 0;
  const json* args = nullptr;
};

double number_or(const json& j, const char* key, double fallback) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return fallback;
  return it->get<double>();
}

std::string id_text(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

bool is_gpu_kind(const std::string& cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
}

bool is_trex_category(const std::string& cat) {
  static const std::set<std::string> kCats = {"gemm", "attention", "moe_dispatch", "elementwise",
                                             "optimizer", "data", "other"};
  return kCats.count(cat) > 0;
}

// "ProfilerStep#12" -> 12; -1 when the name is not a step.
long long step_number(const std::string& name) {
  static const std::string kPrefix = "ProfilerStep#";
  if (name.rfind(kPrefix, 0) != 0) return -1;
  char* end = nullptr;
  long long n = std::strtoll(name.c_str() + kPrefix.size(), &end, 10);
  return end && *end == '\0' ? n : -1;
}

// Self time of nested spans, thread by thread: a span's record keeps its duration less the
// spans it encloses; it counts as a launch unless its children take most of its time.
std::vector<KernelRecord> self_time_records(std::vector<Span> spans) {
  std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.ts != b.ts) return a.ts < b.ts;
    return a.dur > b.dur;  // the enclosing span first
  });
  std::vector<KernelRecord> out;
  out.reserve(spans.size());
  std::vector<size_t> stack;  // indices into out of the open spans of the current thread
  std::string thread;
  for (const Span& s : spans) {
    if (s.thread != thread) {
      stack.clear();
      thread = s.thread;
    }
    while (!stack.empty() && out[stack.back()].start_us + out[stack.back()].dur_us <= s.ts) stack.pop_back();
    KernelRecord r;
    r.name = s.name;
    r.trace_kind = s.cat;
    r.start_us = s.ts;
    r.dur_us = s.dur;  // the full duration until the stack unwinds; self time is fixed below
    r.flops = s.flops;
    r.bytes = s.bytes;
    if (!stack.empty()) out[stack.back()].is_launch = false;
    out.push_back(r);
    stack.push_back(out.size() - 1);
  }
  // Second pass: subtract each span's direct children (the same walk, now on durations).
  std::vector<double> self(out.size());
  for (size_t i = 0; i < out.size(); ++i) self[i] = out[i].dur_us;
  stack.clear();
  thread.clear();
  size_t i = 0;
  for (const Span& s : spans) {
    if (s.thread != thread) {
      stack.clear();
      thread = s.thread;
    }
    while (!stack.empty() && out[stack.back()].start_us + out[stack.back()].dur_us <= s.ts) stack.pop_back();
    if (!stack.empty()) self[stack.back()] -= std::min(s.dur, out[stack.back()].start_us + out[stack.back()].dur_us - s.ts);
    stack.push_back(i++);
  }
  // A span whose children take most of its time is a frame around operators (trex's
  // "attention", PyTorch's aten::linear around aten::addmm); one that keeps most of its time
  // (aten::mm around a tiny aten::empty) is an operator call itself.
  for (size_t k = 0; k < out.size(); ++k) {
    double self_us = std::max(0.0, self[k]);
    if (!out[k].is_launch && self_us >= 0.5 * out[k].dur_us) out[k].is_launch = true;
    out[k].dur_us = self_us;
  }
  return out;
}

std::vector<Interval> intervals_of(const std::vector<Span>& spans) {
  std::vector<Interval> v;
  v.reserve(spans.size());
  for (const Span& s : spans) v.push_back({s.ts, s.ts + s.dur});
  return v;
}

}  // namespace

KernelTrace read_chrome_trace(const std::string& text, const std::string& path) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(path, 0,
                     "not valid JSON (truncated?) at byte " + std::to_string(e.byte) + ": not a readable trace");
  }
  const json* events = nullptr;
  if (doc.is_array()) {
    events = &doc;
  } else if (doc.is_object() && doc.contains("traceEvents") && doc["traceEvents"].is_array()) {
    events = &doc["traceEvents"];
  } else {
    throw InputError(path, 0, "JSON without a \"traceEvents\" array: not a Chrome trace");
  }

  KernelTrace t;
  t.path = path;
  if (doc.is_object()) {
    auto d = doc.find("distributedInfo");
    if (d != doc.end() && d->is_object()) t.rank = int(number_or(*d, "rank", -1));
  }

  // Complete events, and what Kineto's linking needs: each cpu_op's flops by External id, and
  // each runtime launch's External id by correlation.
  std::vector<Span> spans;
  std::map<std::string, double> flops_by_external;
  std::map<std::string, std::string> external_by_correlation;
  size_t index = 0;
  for (const json& e : *events) {
    ++index;
    if (!e.is_object()) throw InputError(path, 0, "traceEvents[" + std::to_string(index - 1) + "] is not an object");
    auto ph = e.find("ph");
    if (ph == e.end() || !ph->is_string() || *ph != "X") continue;
    Span s;
    s.name = e.value("name", std::string());
    s.cat = e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : "";
    if (!e.contains("ts") || !e["ts"].is_number())
      throw InputError(path, 0, "event \"" + s.name + "\": \"ts\" missing or not a number");
    s.ts = e["ts"].get<double>();
    s.dur = number_or(e, "dur", 0);
    if (s.dur < 0) throw InputError(path, 0, "event \"" + s.name + "\": negative \"dur\"");
    s.thread = id_text(e, "pid") + "/" + id_text(e, "tid");
    auto a = e.find("args");
    if (a != e.end() && a->is_object()) {
      s.args = &*a;
      s.flops = number_or(*a, "flops", 0);
      s.bytes = number_or(*a, "bytes", 0);
      std::string ext = id_text(*a, "External id");
      if (s.cat == "cpu_op" && !ext.empty() && s.flops > 0) flops_by_external[ext] += s.flops;
      std::string corr = id_text(*a, "correlation");
      if (!corr.empty() && !ext.empty() && !is_gpu_kind(s.cat)) external_by_correlation[corr] = ext;
    }
    spans.push_back(std::move(s));
  }

  bool any_gpu = false, any_cpu_op = false, any_trex = false;
  for (const Span& s : spans) {
    any_gpu |= is_gpu_kind(s.cat);
    any_cpu_op |= s.cat == "cpu_op";
    any_trex |= is_trex_category(s.cat);
  }
  if (!any_gpu && !any_cpu_op && !any_trex) {
    // PyTorch built without Kineto exports its legacy profiler's trace: a bare array of "X"
    // events without "cat" (pid "CPU functions"), the operators named "aten::...".
    bool aten = false;
    for (const Span& s : spans) aten |= s.cat.empty() && s.name.rfind("aten::", 0) == 0;
    if (aten) {
      for (Span& s : spans)
        if (s.cat.empty()) s.cat = "cpu_op";
      any_cpu_op = true;
    }
  }
  bool named_trex = doc.is_object() && doc.value("traceName", std::string()) == "trex";
  if (any_gpu || (any_cpu_op && !named_trex)) t.format = "kineto";
  else if (any_trex) t.format = "trex";
  else
    throw InputError(path, 0,
                     "a Chrome trace without kernels: no events of cat \"kernel\"/\"gpu_memcpy\"/\"cpu_op\" "
                     "(PyTorch) or of a trex category (trace truncated, or not a training trace)");

  // Steps.
  std::vector<Interval> step_windows;
  for (const Span& s : spans)
    if (long long n = step_number(s.name); n >= 0) {
      t.steps.push_back({n, s.ts, s.ts + s.dur});
      step_windows.push_back({s.ts, s.ts + s.dur});
    }
  std::sort(t.steps.begin(), t.steps.end(), [](const StepSpan& a, const StepSpan& b) { return a.start_us < b.start_us; });
  auto in_a_step = [&](double ts) {
    for (const StepSpan& st : t.steps)
      if (ts >= st.start_us && ts < st.end_us) return true;
    return false;
  };

  std::vector<Span> kernels;
  if (any_gpu) {
    // GPU work runs behind the CPU's steps, so every kernel counts and the window is the span
    // of the device's activity.
    std::map<std::string, int> launches_per_external;
    for (const Span& s : spans) {
      if (!is_gpu_kind(s.cat)) continue;
      kernels.push_back(s);
      if (s.args) {
        std::string ext = id_text(*s.args, "External id");
        if (ext.empty()) {
          auto it = external_by_correlation.find(id_text(*s.args, "correlation"));
          if (it != external_by_correlation.end()) ext = it->second;
        }
        kernels.back().thread = ext;  // reused below as the link to the operator
        if (!ext.empty()) ++launches_per_external[ext];
      }
    }
    for (Span& k : kernels) {
      auto f = flops_by_external.find(k.thread);
      if (k.flops == 0 && f != flops_by_external.end()) k.flops = f->second / launches_per_external[k.thread];
    }
    for (const Span& k : kernels) {
      KernelRecord r;
      r.name = k.name;
      r.trace_kind = k.cat;
      r.start_us = k.ts;
      r.dur_us = k.dur;
      r.flops = k.flops;
      r.bytes = k.bytes;
      t.kernels.push_back(std::move(r));
    }
    std::vector<Interval> iv = intervals_of(kernels);
    t.window_begin_us = iv.empty() ? 0 : iv.front().first;
    t.window_end_us = t.window_begin_us;
    for (const Interval& i : iv) {
      t.window_begin_us = std::min(t.window_begin_us, i.first);
      t.window_end_us = std::max(t.window_end_us, i.second);
    }
    t.window_us = t.window_end_us - t.window_begin_us;
    t.busy_us = covered_us(iv, {{t.window_begin_us, t.window_end_us}});
    if (any_cpu_op) t.notes.push_back("CPU operators left out: the GPU kernels are the device time");
  } else {
    // CPU work: the operator spans themselves, by self time, inside the steps when there are any.
    size_t outside = 0;
    for (const Span& s : spans) {
      bool work = t.format == "trex" ? is_trex_category(s.cat) : s.cat == "cpu_op";
      if (!work || step_number(s.name) >= 0) continue;
      if (!t.steps.empty() && !in_a_step(s.ts)) {
        ++outside;
        continue;
      }
      kernels.push_back(s);
    }
    if (outside > 0)
      t.notes.push_back(std::to_string(outside) + " spans outside every ProfilerStep left out");
    t.kernels = self_time_records(kernels);
    std::vector<Interval> iv = intervals_of(kernels);
    if (t.steps.empty()) {
      for (size_t i = 0; i < iv.size(); ++i) {
        if (i == 0 || iv[i].first < t.window_begin_us) t.window_begin_us = iv[i].first;
        if (i == 0 || iv[i].second > t.window_end_us) t.window_end_us = iv[i].second;
      }
      step_windows = {{t.window_begin_us, t.window_end_us}};
    } else {
      t.window_begin_us = t.steps.front().start_us;
      t.window_end_us = t.steps.back().end_us;
    }
    t.window_us = union_us(step_windows);
    t.busy_us = covered_us(iv, step_windows);
  }
  if (t.kernels.empty())
    throw InputError(path, 0, "no kernel events inside the trace's steps: nothing to analyze");
  return t;
}

}  // namespace trex::profile
