// trex kernels check|bench|list: the fused kernel library's correctness gate and its speed.
//
// check: every kernel's small, odd-sized cases on several seeds, each fused kernel against its
//   eager reference through the gate of kernel_suite.h (poisoned outputs, input hashes,
//   tolerance, determinism); a table (or JSON) per kernel and dtype; exit 1 when any fails.
// bench: each kernel at its benchmark shape, validated by the same gate first, then the fused
//   kernel and the reference timed side by side (median of several calls): time, achieved
//   GB/s and GFLOP/s, percent of the roofline of this machine (from a hardware description
//   written by `trex hw probe`, or a quick probe when there is none), and the speedup. Results
//   that exceed the roofline or a 10x speedup are flagged "suspect" (KernelBench's tripwire).
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "trex/core/cpu_features.h"
#include "trex/core/hw_description.h"
#include "trex/core/hw_probe.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/gemm.h"
#include "trex/kernels/kernel_suite.h"
#include "trex/kernels/tuning.h"
#include "trex/util/data_dir.h"
#include "trex/util/error.h"

namespace trex::cli {

namespace {

using kernels::CheckResult;
using kernels::KernelCase;
using kernels::SuiteSize;

struct KernelsArgs {
  std::vector<std::string> kernels;  // empty: all
  bool json = false;
  int threads = 0;
  int seeds = 3;
  bool quick = false;
  std::string hw;
  double min_time = 0.3;
  std::string tuning;  // a tuning file (`trex aura tune --out`); empty: $TREX_TUNING or none
};

// --tuning FILE makes that file the kernels' tuning (a bad file: one line, exit 2).
void apply_tuning(const KernelsArgs& a) {
  if (!a.tuning.empty()) kernels::use_tuning_file(a.tuning);
}

std::vector<std::string> chosen_kernels(const KernelsArgs& a) {
  const std::vector<std::string>& all = kernels::suite_kernels();
  if (a.kernels.empty()) return all;
  for (const std::string& k : a.kernels)
    if (std::find(all.begin(), all.end(), k) == all.end()) {
      std::string names;
      for (const std::string& n : all) names += (names.empty() ? "" : ", ") + n;
      throw InputError::field("--kernel", "unknown kernel '" + k + "' (one of: " + names + ")");
    }
  return a.kernels;
}

std::unique_ptr<core::ThreadPool> make_pool(int threads) {
  if (threads < 0) throw InputError::field("--threads", "must be >= 0");
  return std::make_unique<core::ThreadPool>(threads);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// ---------------------------------------------------------------------------- check

int run_check(const KernelsArgs& a) {
  if (a.seeds < 1) throw InputError::field("--seeds", "must be >= 1");
  apply_tuning(a);
  std::vector<std::string> names = chosen_kernels(a);
  auto pool = make_pool(a.threads);
  struct Row {
    std::string kernel, dtype;
    int cases = 0, failed = 0;
    double worst = 0;
    bool inputs = true, written = true, det = true;
    std::string first_problem;
  };
  std::vector<Row> rows;
  int failed = 0, total = 0;
  for (const std::string& k : names) {
    std::map<std::string, size_t> row_of;  // dtype -> row
    for (int s = 1; s <= a.seeds; ++s) {
      for (KernelCase& c : kernels::make_cases(k, SuiteSize::kCheck, uint32_t(s), pool.get())) {
        if (!row_of.count(c.dtype)) {
          row_of[c.dtype] = rows.size();
          Row row;
          row.kernel = k;
          row.dtype = c.dtype;
          rows.push_back(row);
        }
        Row& r = rows[row_of[c.dtype]];
        CheckResult res = kernels::check_case(c);
        ++r.cases;
        ++total;
        r.worst = std::max(r.worst, res.worst);
        r.inputs = r.inputs && res.inputs_unchanged;
        r.written = r.written && res.outputs_written;
        r.det = r.det && res.deterministic;
        if (!res.passed) {
          ++r.failed;
          ++failed;
          if (r.first_problem.empty())
            r.first_problem = c.shape + " seed " + std::to_string(s) + ": " + res.message;
        }
      }
    }
  }
  if (a.json) {
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["threads"] = pool->num_threads();
    j["seeds"] = a.seeds;
    j["cases"] = total;
    j["failed"] = failed;
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const Row& r : rows)
      arr.push_back({{"kernel", r.kernel}, {"dtype", r.dtype}, {"cases", r.cases},
                     {"failed", r.failed}, {"worst_error_over_tolerance", r.worst},
                     {"inputs_unchanged", r.inputs}, {"outputs_written", r.written},
                     {"deterministic", r.det}, {"problem", r.first_problem}});
    j["kernels"] = arr;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%-22s %-5s %5s %10s %7s %8s %5s  %s\n", "kernel", "dtype", "cases", "err/tol",
                "inputs", "written", "det", "result");
    for (const Row& r : rows) {
      std::printf("%-22s %-5s %5d %10s %7s %8s %5s  %s\n", r.kernel.c_str(), r.dtype.c_str(),
                  r.cases, fmt("%.3g", r.worst).c_str(), r.inputs ? "same" : "CHANGED",
                  r.written ? "all" : "NO", r.det ? "yes" : "NO",
                  r.failed ? ("FAIL: " + r.first_problem).c_str() : "pass");
    }
    std::printf("%d of %d cases passed (%d seeds, %d threads; err/tol = worst |fused - ref| / "
                "(tol (1 + |ref|)), must be <= 1)\n",
                total - failed, total, a.seeds, pool->num_threads());
  }
  return failed ? 1 : 0;
}

// ---------------------------------------------------------------------------- bench

struct Roofline {
  double peak_flops = 0;  // fp32, all cores
  double bandwidth = 0;   // bytes/s, STREAM triad
  int cores = 0;
  std::string source;
};

Roofline load_roofline(const KernelsArgs& a) {
  Roofline r;
  core::HwDescription d = core::this_machine_description(a.hw, &r.source);
  const std::string& path = r.source;
  r.peak_flops = d.peak.flops_fp32.value;
  r.cores = int(d.device.cores_vector.value);
  if (d.stream && d.stream->triad) r.bandwidth = d.stream->triad->value;
  else if (d.device_memory().bw_read) r.bandwidth = d.device_memory().bw_read->value;
  if (r.bandwidth <= 0) throw InputError(path, 0, "stream.triad: needed for the memory roofline");
  return r;
}

struct BenchRow {
  std::string kernel, dtype, shape;
  bool valid = false;
  std::string problem;
  double fused_s = 0, ref_s = 0;
  int fused_runs = 0, ref_runs = 0;
  double bytes = 0, flops = 0;
  double gbps = 0, gflops = 0, roofline_pct = 0, speedup = 0;
  std::string bound;
  bool suspect = false;
};

BenchRow bench_one(KernelCase& c, const Roofline& roof, int threads, double min_time) {
  BenchRow r;
  r.kernel = c.kernel;
  r.dtype = c.dtype;
  r.shape = c.shape;
  r.bytes = c.bytes;
  r.flops = c.flops;
  CheckResult chk = kernels::check_case(c);
  r.valid = chk.passed;
  if (!r.valid) {
    r.problem = chk.message;
    return r;  // never time a kernel that failed the gate
  }
  kernels::CaseTiming f = kernels::time_call(c.fused, min_time, 5, 1000);
  // The gate has just run the reference (its warm-up); a slow one (the triple-loop GEMM) is
  // timed once.
  kernels::CaseTiming g = kernels::time_call(c.ref, min_time, 1, 1000, false);
  r.fused_s = f.seconds;
  r.fused_runs = f.runs;
  r.ref_s = g.seconds;
  r.ref_runs = g.runs;
  r.gbps = c.bytes / f.seconds / 1e9;
  r.gflops = c.flops / f.seconds / 1e9;
  r.speedup = g.seconds / f.seconds;
  // The roofline time: the larger of the compute time at the (thread-scaled) peak and the
  // memory time at the triad bandwidth.
  double peak = roof.peak_flops * std::min(1.0, double(threads) / std::max(1, roof.cores));
  double t_flop = c.flops / peak, t_mem = c.bytes / roof.bandwidth;
  r.bound = t_flop > t_mem ? "compute" : "memory";
  r.roofline_pct = 100.0 * std::max(t_flop, t_mem) / f.seconds;
  r.suspect = r.roofline_pct > 105.0 || r.speedup > 10.0;
  return r;
}

// OpenBLAS, loaded at run time only for this comparison (trex never links it: its own thread
// pool would compete with trex's, and the kernels do not use it). Null when not installed.
struct OpenBlas {
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                         float, float*, int);
  using SetThreads = void (*)(int);
  Sgemm sgemm = nullptr;
  SetThreads set_threads = nullptr;
  static const OpenBlas* load() {
    static OpenBlas lib = [] {
      OpenBlas o;
      for (const char* name : {"libopenblas.so.0", "libopenblas.so"}) {
        void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (!h) continue;
        o.sgemm = reinterpret_cast<Sgemm>(dlsym(h, "cblas_sgemm"));
        o.set_threads = reinterpret_cast<SetThreads>(dlsym(h, "openblas_set_num_threads"));
        if (o.sgemm && o.set_threads) break;
        o.sgemm = nullptr;
      }
      return o;
    }();
    return lib.sgemm ? &lib : nullptr;
  }
};

struct GemmVsBlas {
  int64_t m = 0, n = 0, k = 0;
  double trex_gflops = 0, openblas_gflops = 0;
  bool agree = false;  // the two results within 1e-4 (1 + |c|) of each other
};

// trex sgemm and OpenBLAS at the same thread count on the squares and the model's skinny
// shapes (tokens x 256..1024 x 256..4096).
std::vector<GemmVsBlas> gemm_vs_openblas(core::ThreadPool& pool, bool quick, double min_time) {
  std::vector<GemmVsBlas> out;
  const OpenBlas* blas = OpenBlas::load();
  if (!blas) return out;
  blas->set_threads(pool.num_threads());
  std::vector<std::array<int64_t, 3>> shapes =
      quick ? std::vector<std::array<int64_t, 3>>{{256, 256, 256}, {512, 256, 256}}
            : std::vector<std::array<int64_t, 3>>{{1024, 1024, 1024}, {2048, 2048, 2048},
                                                  {2048, 256, 256}, {2048, 1024, 4096}};
  for (auto [m, n, k] : shapes) {
    std::vector<float> A(size_t(m * k)), B(size_t(k * n)), C(size_t(m * n)), D(size_t(m * n));
    for (size_t i = 0; i < A.size(); ++i) A[i] = float(int(i * 7919 % 2001) - 1000) / 1000.f;
    for (size_t i = 0; i < B.size(); ++i) B[i] = float(int(i * 104729 % 2001) - 1000) / 1000.f;
    kernels::GemmOptions go;
    go.pool = &pool;
    auto ours = [&] {
      kernels::sgemm(kernels::Trans::kNo, kernels::Trans::kNo, m, n, k, 1.f, A.data(), k, B.data(),
                     n, 0.f, C.data(), n, go);
    };
    auto theirs = [&] {
      blas->sgemm(101, 111, 111, int(m), int(n), int(k), 1.f, A.data(), int(k), B.data(), int(n),
                  0.f, D.data(), int(n));  // row-major, no transposes
    };
    GemmVsBlas r{m, n, k};
    double flops = 2.0 * double(m) * double(n) * double(k);
    r.trex_gflops = flops / kernels::time_call(ours, min_time, 5, 1000).seconds / 1e9;
    r.openblas_gflops = flops / kernels::time_call(theirs, min_time, 5, 1000).seconds / 1e9;
    r.agree = true;
    for (size_t i = 0; i < C.size(); ++i)
      if (!(std::fabs(C[i] - D[i]) <= 1e-4 * (1 + std::fabs(D[i])))) r.agree = false;
    out.push_back(r);
  }
  return out;
}

int run_bench(const KernelsArgs& a) {
  if (a.min_time <= 0) throw InputError::field("--min-time", "must be > 0");
  std::vector<std::string> names = chosen_kernels(a);
  apply_tuning(a);
  Roofline roof = load_roofline(a);
  auto pool = make_pool(a.threads);
  const int threads = pool->num_threads();
  std::vector<BenchRow> rows;
  if (!a.json)
    std::printf("%-21s %-5s %-40s %10s %10s %8s %7s %7s %6s  %s\n", "kernel", "dtype", "shape",
                "fused ms", "ref ms", "speedup", "GB/s", "GFLOP/s", "roof%", "bound");
  for (const std::string& k : names) {
    for (KernelCase& c : kernels::make_cases(k, a.quick ? SuiteSize::kQuick : SuiteSize::kFull, 1, pool.get())) {
      BenchRow r = bench_one(c, roof, threads, a.min_time);
      if (!a.json) {
        if (!r.valid)
          std::printf("%-21s %-5s %-40s FAILED THE GATE: %s\n", r.kernel.c_str(), r.dtype.c_str(),
                      r.shape.c_str(), r.problem.c_str());
        else
          std::printf("%-21s %-5s %-40s %10.3f %10.3f %7.2fx %7.1f %7.1f %5.0f%%  %s%s\n",
                      r.kernel.c_str(), r.dtype.c_str(), r.shape.c_str(), r.fused_s * 1e3,
                      r.ref_s * 1e3, r.speedup, r.gbps, r.gflops, r.roofline_pct, r.bound.c_str(),
                      r.suspect ? (r.speedup > 10 ? " suspect: >10x" : " suspect: above roofline") : "");
        std::fflush(stdout);
      }
      rows.push_back(r);
    }
  }
  // Derived figures of the goals, from this run.
  double gemm_gflops = 0, attn_gflops = 0;
  for (const BenchRow& r : rows) {
    if (r.kernel == "gemm" && r.valid) gemm_gflops = r.gflops;
    if (r.kernel == "sparse_attention.fwd" && r.valid) attn_gflops = r.gflops;
  }
  bool all_valid = std::all_of(rows.begin(), rows.end(), [](const BenchRow& r) { return r.valid; });
  std::vector<GemmVsBlas> blas;
  if (std::find(names.begin(), names.end(), "gemm") != names.end())
    blas = gemm_vs_openblas(*pool, a.quick, a.min_time);
  for (const GemmVsBlas& g : blas) all_valid = all_valid && g.agree;
  if (a.json) {
    nlohmann::ordered_json j;
    j["schema_version"] = 1;
    j["context"] = {{"cpu_isa", core::to_string(core::best_isa())},
                    {"threads", threads},
                    {"size", a.quick ? "quick" : "full"},
                    {"hardware", roof.source},
                    {"peak_flops_fp32", roof.peak_flops},
                    {"triad_bytes_per_s", roof.bandwidth},
                    {"trex_version", version()},
#ifdef NDEBUG
                    {"build", "release"}
#else
                    {"build", "debug (timings not meaningful)"}
#endif
    };
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const BenchRow& r : rows) {
      nlohmann::ordered_json e = {{"kernel", r.kernel}, {"dtype", r.dtype}, {"shape", r.shape},
                                  {"valid", r.valid}};
      if (!r.valid) {
        e["problem"] = r.problem;
      } else {
        e["fused_seconds"] = r.fused_s;
        e["fused_runs"] = r.fused_runs;
        e["reference_seconds"] = r.ref_s;
        e["reference_runs"] = r.ref_runs;
        e["speedup"] = r.speedup;
        e["bytes"] = r.bytes;
        e["flops"] = r.flops;
        e["gb_per_s"] = r.gbps;
        e["gflop_per_s"] = r.gflops;
        e["roofline_percent"] = r.roofline_pct;
        e["bound"] = r.bound;
        e["suspect"] = r.suspect;
      }
      arr.push_back(e);
    }
    j["results"] = arr;
    if (gemm_gflops > 0 && attn_gflops > 0)
      j["sparse_attention_fwd_over_gemm"] = attn_gflops / gemm_gflops;
    nlohmann::ordered_json gb = nlohmann::ordered_json::array();
    for (const GemmVsBlas& g : blas)
      gb.push_back({{"m", g.m}, {"n", g.n}, {"k", g.k}, {"trex_gflop_per_s", g.trex_gflops},
                    {"openblas_gflop_per_s", g.openblas_gflops},
                    {"trex_over_openblas", g.trex_gflops / g.openblas_gflops}, {"agree", g.agree}});
    j["gemm_vs_openblas"] = gb;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("roofline: %.1f GFLOP/s fp32 peak (%d of %d cores), %.1f GB/s triad, from %s\n",
                roof.peak_flops / 1e9 * std::min(1.0, double(threads) / std::max(1, roof.cores)),
                std::min(threads, roof.cores), roof.cores, roof.bandwidth / 1e9, roof.source.c_str());
    if (gemm_gflops > 0 && attn_gflops > 0)
      std::printf("sparse attention forward / GEMM FLOP rate: %.0f%%\n", 100 * attn_gflops / gemm_gflops);
    for (const GemmVsBlas& g : blas)
      std::printf("gemm %ld x %ld x %ld: trex %.1f GFLOP/s, OpenBLAS %.1f GFLOP/s (%.0f%%)%s\n",
                  long(g.m), long(g.n), long(g.k), g.trex_gflops, g.openblas_gflops,
                  100 * g.trex_gflops / g.openblas_gflops, g.agree ? "" : " RESULTS DIFFER");
  }
  return all_valid ? 0 : 1;
}

int run_list() {
  for (const std::string& k : kernels::suite_kernels()) std::printf("%s\n", k.c_str());
  return 0;
}

}  // namespace

void add_kernels_command(CLI::App& app, Action* action) {
  CLI::App* kc = app.add_subcommand("kernels", "Fused kernels: correctness gate and speed");
  kc->require_subcommand(1);
  auto args = std::make_shared<KernelsArgs>();
  auto common = [&](CLI::App* sub) {
    sub->add_option("--kernel", args->kernels, "Only these kernels (repeatable; see `trex kernels list`)");
    sub->add_flag("--json", args->json, "Print one JSON object instead of the table");
    sub->add_option("--threads", args->threads, "Threads (default: TREX_THREADS or all CPUs)");
    sub->add_option("--tuning", args->tuning, "Kernel tuning file (TOML, `trex aura tune --out`; default: $TREX_TUNING)");
  };
  CLI::App* check = kc->add_subcommand("check", "Run every fused kernel against its reference on small, odd shapes");
  common(check);
  check->add_option("--seeds", args->seeds, "Seeds per shape")->capture_default_str();
  check->callback([args, action] { *action = [args] { return run_check(*args); }; });
  CLI::App* bench = kc->add_subcommand("bench", "Time each fused kernel beside its reference");
  common(bench);
  bench->add_flag("--quick", args->quick, "Small shapes (about a second per kernel), for tests");
  bench->add_option("--hw", args->hw,
                    "Hardware description for the roofline (default: ./this-machine.toml, else a quick probe)");
  bench->add_option("--min-time", args->min_time, "Seconds to time each side at least")->capture_default_str();
  bench->footer("Shapes, byte and FLOP counts: docs/kernels-suite.md.");
  bench->callback([args, action] { *action = [args] { return run_bench(*args); }; });
  CLI::App* list = kc->add_subcommand("list", "List the kernels of the suite");
  list->callback([action] { *action = [] { return run_list(); }; });
}

namespace {
const CommandRegistration kKernelsRegistration(60, add_kernels_command);
}  // namespace

}  // namespace trex::cli
