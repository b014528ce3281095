// Every memory-bound kernel of the suite against the STREAM triad of the same machine, in one
// process (issue 15's goal: each at least 80% of the probed triad): the triad is probed first
// (trex hw probe's method: core::probe_hardware on the same thread count), then each fused case
// runs at the suite's full benchmark shape on a pool of that many threads and is timed by wall
// time (kernel_suite's time_call: a warm-up call, then the median of at least 5 calls and
// --min-time seconds). GB/s counts the case's minimum traffic (each input read once, each output
// written once), as STREAM counts its arrays, so GB/s / triad is the goal's fraction. A case is
// memory-bound when its traffic at the triad takes longer than its contraction FLOPs at the
// probed fp32 peak; compute-bound cases are listed with their fraction of the peak instead.
//
//   TREX_THREADS=2 build/kernel_triad_bench [--gate] [--triad GBPS --peak GFLOPS] [--min-time S]
//                                           [--paired ROUNDS] [--ref-gbs GBPS] [KERNEL...]
// --triad/--peak skip the probe (two builds run in alternation share one probe); --gate runs each
// case through the kernel gate first (check_case: the eager reference at full size, slow).
// --paired R: the fraction of triad as the median over R rounds of (case GB/s) / (triad GB/s),
// each round timing the STREAM triad (the probe's loop and arrays: 3 x 128 MiB of doubles, on the
// same pool; the fastest of its calls, as the probe's best-of) and the case (the median of its
// calls, as unpaired) back to back, in alternating order. On this shared 2-core machine the
// one probe at the start and the cases saw different loads: the session-19 "near idle" table
// (load 1.5) probed 40.4 GB/s and 292 GFLOP/s where trex hw probe had 42.2 and 434 minutes
// before, and single cases moved 1.5-2x between runs. Paired, the two sides of a ratio see
// closer loads (not the same: a compute-heavy case loses more to other processes' CPU use). The table's ms and GB/s columns are then medians over the rounds.
// --ref-gbs G: the "of ref" column (JSON of_ref) is each case's GB/s over G, a fixed bandwidth
// (the machine's near-idle probe, e.g. 51.6), beside the triad ratio. Under load the paired
// triad falls with the case, so the same code read 50-130% of it across session 28's runs; a
// fixed reference moves only with the case. Without --ref-gbs it is the start probe's (or
// --triad's) figure, so "of ref" is then the unpaired ratio.
// Prints a markdown table, then one JSON object per case on lines starting with "json ".
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trex/core/arena.h"
#include "trex/core/hw_probe.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/kernel_suite.h"

namespace {

const std::vector<std::string> kMemoryBound = {
    "rmsnorm.fwd",  "rmsnorm.bwd",  "swiglu.fwd",      "swiglu.bwd",       "rope.fwd",
    "cross_entropy", "kv_compress.fwd", "kv_compress.bwd", "mhc.post_fwd", "mhc.post_bwd",
    "mhc.head_fwd", "mhc.head_bwd", "cast.fp32_to_bf16", "cast.bf16_to_fp32", "adamw"};

// The probe's STREAM triad (hw_probe.cc: the same loop and scalar, 3 arrays of 128 MiB, each
// thread its own contiguous chunk, first touched by that thread), as a callable on the pool.
class Triad {
 public:
  static constexpr int64_t kN = int64_t(1) << 24;  // doubles per array: 128 MiB
  explicit Triad(trex::core::ThreadPool& pool)
      : pool_(pool), a_(trex::core::aligned_array<double>(kN)),
        b_(trex::core::aligned_array<double>(kN)), c_(trex::core::aligned_array<double>(kN)) {
    run([](double* a, double* b, double* c, int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) a[i] = 1.0, b[i] = 2.0, c[i] = 0.0;
    });
  }
  void operator()() {
    run([](double* __restrict a, const double* __restrict b, const double* __restrict c,
           int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0 * c[i];
    });
  }
  static double bytes() { return 3.0 * double(kN) * sizeof(double); }

 private:
  template <class F>
  void run(F f) {
    const int nt = pool_.num_threads();
    double *a = a_.get(), *b = b_.get(), *c = c_.get();
    pool_.run([&](int th) { f(a, b, c, kN * th / nt, kN * (th + 1) / nt); });
  }
  trex::core::ThreadPool& pool_;
  std::unique_ptr<double[], trex::core::AlignedDeleter> a_, b_, c_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size();
  return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

int threads_from_env() {
  const char* t = std::getenv("TREX_THREADS");
  const int n = t ? std::atoi(t) : 0;
  return n > 0 ? n : 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool gate = false;
  double triad = 0, peak = 0, min_time = 0.5, ref = 0;
  int paired = 0;
  std::vector<std::string> kernels;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "kernel_triad_bench: %s needs a value\n", name);
        std::exit(2);
      }
      // strtod with the end checked: atof read "51.6x" as 51.6 and "x" as 0.
      const char* text = argv[++i];
      char* end = nullptr;
      const double v = std::strtod(text, &end);
      if (end == text || *end != '\0') {
        std::fprintf(stderr, "kernel_triad_bench: %s must be a number, got '%s'\n", name, text);
        std::exit(2);
      }
      if (!(v > 0) || !std::isfinite(v)) {  // "inf" and "1e999" parse; every share would print 0
        std::fprintf(stderr, "kernel_triad_bench: %s must be finite and > 0, got '%s'\n", name, text);
        std::exit(2);
      }
      return v;
    };
    if (a == "--gate") gate = true;
    else if (a == "--triad") triad = value("--triad") * 1e9;
    else if (a == "--peak") peak = value("--peak") * 1e9;
    else if (a == "--min-time") min_time = value("--min-time");
    else if (a == "--ref-gbs") ref = value("--ref-gbs") * 1e9;
    else if (a == "--paired") {
      const double r = value("--paired");
      if (r > 1000 || r != double(int(r))) {  // the bound first: int() of a huge double is undefined
        std::fprintf(stderr, "kernel_triad_bench: --paired must be a whole number of rounds <= 1000, got '%s'\n", argv[i]);
        return 2;
      }
      paired = int(r);
    }
    else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "kernel_triad_bench: unknown flag '%s'\n", a.c_str());
      return 2;
    } else kernels.push_back(a);
  }
  if ((triad > 0) != (peak > 0)) {
    std::fprintf(stderr, "kernel_triad_bench: --triad and --peak go together\n");
    return 2;
  }
  if (kernels.empty()) kernels = kMemoryBound;
  const int threads = threads_from_env();
  if (triad <= 0) {
    trex::core::ProbeOptions po;
    po.threads = threads;
    const trex::core::ProbeResult r = trex::core::probe_hardware(po);
    triad = r.stream.triad;
    peak = r.best_fma().flops_all_cores;
    std::printf("probe (%d threads): triad %.2f GB/s, triad_nt %.2f GB/s, fp32 peak %.1f GFLOP/s\n",
                threads, triad / 1e9, r.stream.triad_nt / 1e9, peak / 1e9);
  }
  const bool ref_given = ref > 0;
  if (!ref_given) ref = triad;
  std::printf("ref: %.2f GB/s (%s)\n", ref / 1e9,
              ref_given ? "--ref-gbs" : "the start probe's triad or --triad; --ref-gbs sets a fixed one");
  // The probe's and --paired's triad arrays and every case's buffers come from the same allocator
  // (core::aligned_alloc_bytes), so all of them are on the same pages.
  const bool huge = trex::core::large_buffers_ask_for_huge_pages();
  std::printf("pages: buffers of 2 MiB and more %s (the cases', the probe's and --paired's triad alike)\n",
              huge ? "ask for transparent huge pages" : "on 4 KiB pages (TREX_HUGEPAGES=0)");
  trex::core::ThreadPool pool(threads);
  std::unique_ptr<Triad> tri;
  if (paired > 0) tri = std::make_unique<Triad>(pool);
  std::printf("\n| kernel | dtype | shape | ms | GB/s | of triad | of ref | GFLOP/s | of peak | bound |\n"
              "|---|---|---|---:|---:|---:|---:|---:|---:|---|\n");
  std::vector<std::string> json;
  for (const std::string& k : kernels) {
    std::vector<trex::kernels::KernelCase> cases;
    try {
      cases = trex::kernels::make_cases(k, trex::kernels::SuiteSize::kFull, 1, &pool);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kernel_triad_bench: %s\n", e.what());
      return 2;
    }
    for (trex::kernels::KernelCase& c : cases) {
      if (gate) {
        const trex::kernels::CheckResult r = trex::kernels::check_case(c);
        if (!r.passed) {
          std::printf("| %s | %s | %s | failed the gate: %s |\n", c.kernel.c_str(), c.dtype.c_str(),
                      c.shape.c_str(), r.message.c_str());
          continue;
        }
      }
      trex::kernels::CaseTiming t;
      double of_triad = 0, triad_here = triad;
      if (paired > 0) {
        std::vector<double> secs, tsecs, ratios;
        for (int r = 0; r < paired; ++r) {
          trex::kernels::CaseTiming ct, tt;
          auto time_triad = [&] { tt = trex::kernels::time_call(std::ref(*tri), min_time / 3, 3, 1000, true,
                                                             trex::kernels::TimeClock::kWall,
                                                             trex::kernels::TimeStat::kFastest);
          };
          if (r % 2 == 0) time_triad();
          ct = trex::kernels::time_call(c.fused, min_time, 5, 1000);
          if (r % 2 == 1) time_triad();
          secs.push_back(ct.seconds);
          tsecs.push_back(tt.seconds);
          ratios.push_back((c.bytes / ct.seconds) / (Triad::bytes() / tt.seconds));
          t.runs += ct.runs;
        }
        t.seconds = median(secs);
        triad_here = Triad::bytes() / median(tsecs);
        of_triad = median(ratios);
      } else {
        t = trex::kernels::time_call(c.fused, min_time, 5, 1000);
      }
      const double gbs = c.bytes / t.seconds, gfs = c.flops / t.seconds;
      if (paired <= 0) of_triad = gbs / triad;
      const bool memory = c.bytes / triad >= c.flops / peak;
      std::printf("| %s | %s | %s | %.3f | %.1f | %.0f%% | %.0f%% | %.1f | %.0f%% | %s |\n",
                  c.kernel.c_str(), c.dtype.c_str(), c.shape.c_str(), 1e3 * t.seconds, gbs / 1e9,
                  100 * of_triad, 100 * gbs / ref, gfs / 1e9, 100 * gfs / peak,
                  memory ? "memory" : "compute");
      std::fflush(stdout);
      char buf[512];
      std::snprintf(buf, sizeof buf,
                    "json {\"kernel\":\"%s\",\"dtype\":\"%s\",\"shape\":\"%s\",\"seconds\":%.6g,"
                    "\"runs\":%d,\"bytes\":%.6g,\"flops\":%.6g,\"triad\":%.6g,\"peak\":%.6g,"
                    "\"threads\":%d,\"bound\":\"%s\",\"paired_rounds\":%d,\"of_triad\":%.6g,"
                    "\"ref\":%.6g,\"of_ref\":%.6g,\"huge_pages_requested\":%s}",
                    c.kernel.c_str(), c.dtype.c_str(), c.shape.c_str(), t.seconds, t.runs, c.bytes,
                    c.flops, triad_here, peak, threads, memory ? "memory" : "compute", paired,
                    of_triad, ref, gbs / ref, huge ? "true" : "false");
      json.push_back(buf);
    }
  }
  std::printf("\n");
  for (const std::string& j : json) std::printf("%s\n", j.c_str());
  return 0;
}
