// One sparse attention tuning entry against the kernels' built-in, in one process, at each kind
// of the step's attention layers. The kernels look sparse attention's entry up by tokens, heads
// and head_dim alone, so one entry serves the window-only (ratio 0), CSA (4) and HCA (128)
// layers alike (docs/aura.md, "Sparse attention's layers"): a configuration `trex aura tune`
// found on one kind has to be judged on all three, and on their sum, which is what the step pays
// (v4-micro has three layers of each kind, the MTP block's included).
//
// Each pair measures every (kernel, ratio) case once with no tuning and once with the entry, the
// order swapped every pair, so a drift in the machine's load falls on both arms; a measurement is
// the median of at least 5 calls and --min-time seconds (the calling thread's CPU time at one
// thread, wall time otherwise). Per case and per kernel's sum over the ratios: both arms' medians
// over the pairs, the median of the per-pair ratios built-in / tuned (above 1: the entry is
// faster) and how many pairs the entry won. Every case passes the kernel gate (poisoned outputs,
// the eager reference, inputs unchanged, a second run bit-identical) under both arms first.
//   build/aura_attention_ab_bench --threads 2 --pairs 9 --bwd chunks=8 --fwd query_block=8
// Bad arguments: one line naming the argument, exit 2; a case that fails the gate: exit 1.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "trex/core/thread_pool.h"
#include "trex/kernels/kernel_suite.h"
#include "trex/kernels/tuning.h"

namespace {

using trex::kernels::ParamMap;

[[noreturn]] void bad(const std::string& what) {
  std::fprintf(stderr, "aura_attention_ab_bench: %s\n", what.c_str());
  std::exit(2);
}

int64_t to_int(const std::string& arg, const std::string& text, int64_t lo, int64_t hi) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < lo || v > hi)
    bad(arg + ": '" + text + "' is not an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  return v;
}

// "chunks=8" or "query_block=8,..." into a parameter map, each checked by the kernels' own rule.
ParamMap parse_config(const std::string& arg, const std::string& kernel, const std::string& text) {
  ParamMap p;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) bad(arg + ": '" + item + "' is not NAME=VALUE");
    const std::string name = item.substr(0, eq);
    const int64_t v = to_int(arg, item.substr(eq + 1), -(int64_t(1) << 40), int64_t(1) << 40);
    try {
      trex::kernels::check_param(kernel, name, v);
    } catch (const std::exception& e) {
      bad(arg + ": " + e.what());
    }
    p[name] = v;
    at = comma + 1;
  }
  return p;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Case {
  std::string kernel;
  int64_t ratio = 0;
  trex::kernels::KernelCase kc;
  std::vector<double> builtin_s, tuned_s;
};

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, pairs = 9;
  double min_time = 0.2;
  int64_t tokens = 2048, heads = 8, head_dim = 128;
  std::vector<int64_t> ratios = {0, 4, 128};
  ParamMap fwd, bwd;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      json = true;
      continue;
    }
    if (i + 1 >= argc) bad(a + ": needs a value (or is not an argument)");
    const std::string v = argv[++i];
    if (a == "--threads") threads = int(to_int(a, v, 1, 256));
    else if (a == "--pairs") pairs = int(to_int(a, v, 5, 1000));
    else if (a == "--min-time") {
      char* end = nullptr;
      min_time = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(min_time > 0 && min_time <= 10)) bad(a + ": '" + v + "' is not seconds in (0, 10]");
    } else if (a == "--tokens") tokens = to_int(a, v, 1, 1 << 20);
    else if (a == "--heads") heads = to_int(a, v, 1, 1024);
    else if (a == "--head-dim") head_dim = to_int(a, v, 1, 4096);
    else if (a == "--ratios") {
      ratios.clear();
      size_t at = 0;
      while (at <= v.size()) {
        const size_t comma = std::min(v.find(',', at), v.size());
        const int64_t r = to_int(a, v.substr(at, comma - at), 0, 128);
        if (r != 0 && r != 4 && r != 128) bad(a + ": ratio " + std::to_string(r) + " is not 0, 4 or 128");
        ratios.push_back(r);
        at = comma + 1;
      }
    } else if (a == "--fwd") fwd = parse_config(a, "sparse_attention.fwd", v);
    else if (a == "--bwd") bwd = parse_config(a, "sparse_attention.bwd", v);
    else bad("unknown argument '" + a + "'");
  }
  if (fwd.empty() && bwd.empty()) bad("--fwd or --bwd: give the entry to compare (e.g. --bwd chunks=8)");

  // The entry exactly as a tuning file would hold it: the class the kernels look up.
  const std::string cls = trex::kernels::shape_class({tokens, heads, head_dim});
  auto tuned = std::make_shared<trex::kernels::Tuning>();
  if (!fwd.empty()) tuned->set("sparse_attention.fwd", cls, fwd);
  if (!bwd.empty()) tuned->set("sparse_attention.bwd", cls, bwd);

  trex::core::ThreadPool pool(threads);
  std::vector<Case> cases;
  for (const char* kernel : {"sparse_attention.fwd", "sparse_attention.bwd"}) {
    if ((std::string(kernel) == "sparse_attention.fwd" ? fwd : bwd).empty()) continue;
    for (int64_t r : ratios) {
      for (trex::kernels::KernelCase& kc : trex::kernels::make_cases_at(kernel, {tokens, heads, head_dim, r}, 1, &pool)) {
        if (kc.dtype != "fp32") continue;  // the model's attention storage
        Case c;
        c.kernel = kernel;
        c.ratio = r;
        c.kc = std::move(kc);
        cases.push_back(std::move(c));
      }
    }
  }
  for (Case& c : cases) {
    for (int arm = 0; arm < 2; ++arm) {
      trex::kernels::set_active_tuning(arm ? tuned : nullptr);
      const trex::kernels::CheckResult r = trex::kernels::check_case(c.kc);
      if (!r.passed) {
        std::fprintf(stderr, "aura_attention_ab_bench: %s ratio %lld (%s) failed the gate: %s\n", c.kernel.c_str(),
                     (long long)c.ratio, arm ? "tuned" : "built-in", r.message.c_str());
        return 1;
      }
    }
  }
  const auto clock = threads == 1 ? trex::kernels::TimeClock::kThreadCpu : trex::kernels::TimeClock::kWall;
  for (int p = 0; p < pairs; ++p) {
    for (Case& c : cases) {
      for (int k = 0; k < 2; ++k) {
        const bool arm_tuned = (k == 0) == (p % 2 == 1);  // built-in first on even pairs
        trex::kernels::set_active_tuning(arm_tuned ? tuned : nullptr);
        const double s = trex::kernels::time_call(c.kc.fused, min_time, 5, 1000, true, clock,
                                                  trex::kernels::TimeStat::kMedian).seconds;
        (arm_tuned ? c.tuned_s : c.builtin_s).push_back(s);
      }
    }
  }
  trex::kernels::set_active_tuning(nullptr);

  nlohmann::json out = {{"threads", threads}, {"pairs", pairs}, {"min_time_s", min_time},
                        {"shape_class", cls}, {"clock", threads == 1 ? "thread_cpu" : "wall"},
                        {"fwd", fwd}, {"bwd", bwd}, {"cases", nlohmann::json::array()}, {"sums", nlohmann::json::array()}};
  auto summary = [&](const std::vector<double>& b, const std::vector<double>& t) {
    std::vector<double> ratio;
    int wins = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      ratio.push_back(b[i] / t[i]);
      wins += t[i] < b[i];
    }
    return nlohmann::json{{"builtin_ms", median(b) * 1e3}, {"tuned_ms", median(t) * 1e3},
                          {"median_pair_ratio", median(ratio)}, {"tuned_faster_pairs", wins},
                          {"pair_ratios", ratio}};
  };
  if (!json) std::printf("%-22s %5s %11s %11s %8s %6s\n", "kernel", "ratio", "built-in ms", "tuned ms", "ratio", "wins");
  for (const char* kernel : {"sparse_attention.fwd", "sparse_attention.bwd"}) {
    std::vector<double> sb(size_t(pairs), 0), st(size_t(pairs), 0);
    bool any = false;
    for (const Case& c : cases) {
      if (c.kernel != kernel) continue;
      any = true;
      nlohmann::json j = summary(c.builtin_s, c.tuned_s);
      j["kernel"] = c.kernel;
      j["ratio"] = c.ratio;
      j["shape"] = c.kc.shape;
      for (int p = 0; p < pairs; ++p) {
        sb[size_t(p)] += c.builtin_s[size_t(p)];
        st[size_t(p)] += c.tuned_s[size_t(p)];
      }
      if (!json)
        std::printf("%-22s %5lld %11.3f %11.3f %8.4f %3d/%d\n", kernel, (long long)c.ratio, j["builtin_ms"].get<double>(),
                    j["tuned_ms"].get<double>(), j["median_pair_ratio"].get<double>(), j["tuned_faster_pairs"].get<int>(), pairs);
      out["cases"].push_back(j);
    }
    if (!any) continue;
    nlohmann::json j = summary(sb, st);
    j["kernel"] = kernel;
    j["ratios"] = ratios;
    if (!json)
      std::printf("%-22s %5s %11.3f %11.3f %8.4f %3d/%d\n", kernel, "sum", j["builtin_ms"].get<double>(),
                  j["tuned_ms"].get<double>(), j["median_pair_ratio"].get<double>(), j["tuned_faster_pairs"].get<int>(), pairs);
    out["sums"].push_back(j);
  }
  if (json) std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
