// Optimizer benchmarks, side by side in one run:
//  1. the fused AdamW kernel against its eager chain (kernels/adamw.h) on 16M parameters:
//     GB/s of the minimum traffic (read theta, m, v, g: 16 B; write theta, m, v: 12 B; write
//     the bf16 copy: 2 B; 30 B per parameter, the same count for both) and its percentage of the
//     STREAM triad that trex's hardware probe measures at start-up (the full probe, ~10-20 s);
//  2. one optimizer step on P parameters (default 50M; TREX_OPTIM_BENCH_PARAMS): the in-memory
//     AdamW against the SwapOptimizer with its state in a file (TREX_OPTIM_BENCH_DIR, default
//     /tmp), buffered (page cache warm: the tier runs at memory-copy speed) and with O_DIRECT
//     (the device's own speed), 3 slots and 2, with the hidden share of the I/O time.
// Reproduce (medians of 5, one command line):
//   ./build-optim/optim_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Threads: the shared default pool (TREX_THREADS or all CPUs of the affinity mask); the swap
// optimizer's loader and storer threads come on top of it.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "trex/core/arena.h"
#include "trex/core/bf16.h"
#include "trex/core/hw_probe.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/adamw.h"
#include "trex/optim/adamw.h"
#include "trex/optim/swap_optimizer.h"

namespace {

using trex::core::bf16;

double g_triad = 0;  // bytes/s, from the probe in main()

template <class T>
using Buf = std::unique_ptr<T[], trex::core::AlignedDeleter>;

// An aligned array first touched by the pool's threads, filled with values in
// [lo, lo + span) from a cheap hash (an RNG would dominate setup at this size).
Buf<float> make(int64_t n, uint32_t seed, float lo, float span) {
  auto a = trex::core::aligned_array<float>(size_t(n));
  float* p = a.get();
  trex::core::default_thread_pool().parallel_for(0, n, 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      uint32_t h = uint32_t(i) * 2654435761u ^ seed * 40503u;
      h ^= h >> 15;
      h *= 2246822519u;
      h ^= h >> 13;
      p[i] = lo + span * float(h & 0xffff) / 65536.f;
    }
  });
  return a;
}

void set_traffic(benchmark::State& st, int64_t n) {
  double bytes = 30.0 * double(n) * double(st.iterations());
  st.counters["bytes_per_second"] = benchmark::Counter(bytes, benchmark::Counter::kIsRate);
  if (g_triad > 0)
    st.counters["pct_triad"] = benchmark::Counter(bytes / g_triad * 100.0,
                                                  benchmark::Counter::kIsRate);
}

// range(0): 1 = fused, 0 = eager chain.
void BM_AdamWKernel(benchmark::State& st) {
  const int64_t n = int64_t(16) << 20;
  bool fused = st.range(0) != 0;
  auto theta = make(n, 1, -1.f, 2.f), m = make(n, 2, -1e-3f, 2e-3f), v = make(n, 3, 0.f, 1e-6f);
  auto g = make(n, 4, -1e-2f, 2e-2f);
  auto w = trex::core::aligned_array<bf16>(size_t(n));
  // Decay 1 and a tiny step keep the state bounded however many iterations run.
  trex::kernels::AdamWScalars sc =
      trex::kernels::adamw_scalars({1e-7f, 0.9f, 0.999f, 1e-8f, 0.f}, 100);
  for (auto _ : st) {
    if (fused)
      trex::kernels::adamw_update(sc, theta.get(), m.get(), v.get(), g.get(), w.get(), n);
    else
      trex::kernels::adamw_update_ref(sc, theta.get(), m.get(), v.get(), g.get(), w.get(), n);
    benchmark::DoNotOptimize(w.get());
    benchmark::ClobberMemory();
  }
  set_traffic(st, n);
}
BENCHMARK(BM_AdamWKernel)->Arg(1)->Arg(0)->ArgName("fused")->Unit(benchmark::kMillisecond)
    ->UseRealTime();

int64_t bench_params() {
  const char* e = std::getenv("TREX_OPTIM_BENCH_PARAMS");
  return e && std::atoll(e) > 0 ? std::atoll(e) : int64_t(50'000'000);
}

std::string bench_dir() {
  const char* e = std::getenv("TREX_OPTIM_BENCH_DIR");
  return e && *e ? e : "/tmp";
}

// range(0): 0 = in-memory AdamW, 1 = swap buffered, 2 = swap O_DIRECT, 3 = swap buffered
// through pread/pwrite instead of io_uring, 4 = swap buffered with a compute pool of one thread
// fewer than the default pool (a core left to the loader and the storer), 5 = swap through the
// mmap back end (memcpy to and from the mapped file). range(1): slots.
// range(2): chunk elements in units of 2^20.
void BM_OptimizerStep(benchmark::State& st) {
  const int64_t n = bench_params();
  int kind = int(st.range(0));
  std::vector<trex::optim::ParamGroup> groups = {
      {"matrices", n - n / 100, {1e-4f, 0.9f, 0.999f, 1e-8f, 0.1f}},
      {"norms", n / 100, {1e-4f, 0.9f, 0.999f, 1e-8f, 0.f}}};
  auto grads = make(n, 5, -1e-2f, 2e-2f);
  auto w = trex::core::aligned_array<bf16>(size_t(n));
  std::unique_ptr<trex::core::ThreadPool> small_pool;  // outlives opt (declared first)
  std::unique_ptr<trex::optim::Optimizer> opt;
  trex::optim::SwapOptimizer* swap = nullptr;
  {
    auto init = make(n, 6, -1.f, 2.f);
    if (kind == 0) {
      opt = std::make_unique<trex::optim::AdamW>(groups, init.get());
    } else {
      trex::optim::SwapOptions o;
      o.path = bench_dir() + "/trex_optim_bench_" + std::to_string(::getpid()) + ".swap";
      o.slots = int(st.range(1));
      o.chunk_elems = st.range(2) << 20;
      o.direct = kind == 2;
      if (kind == 3) o.backend = trex::optim::IoBackend::kPread;
      if (kind == 5) o.backend = trex::optim::IoBackend::kMmap;
      if (kind == 4) {
        int t = std::max(1, trex::core::default_thread_pool().num_threads() - 1);
        small_pool = std::make_unique<trex::core::ThreadPool>(t);
        o.pool = small_pool.get();
      }
      auto s = std::make_unique<trex::optim::SwapOptimizer>(groups, init.get(), o);
      swap = s.get();
      opt = std::move(s);
      if (kind == 2 && !swap->direct()) {
        st.SkipWithError(("O_DIRECT unavailable: " + swap->fallback_reason()).c_str());
        return;
      }
    }
  }
  opt->step(grads.get(), w.get());  // untimed: first touch, and the page cache warm
  double hidden = 0, io = 0, wall = 0, compute = 0, rd = 0, wr = 0;
  for (auto _ : st) {
    opt->step(grads.get(), w.get());
    benchmark::DoNotOptimize(w.get());
    if (swap) {
      const trex::optim::SwapStats& s = swap->last_step();
      hidden += s.hidden_fraction() * s.io_s;
      io += s.io_s;
      wall += s.wall_s;
      compute += s.compute_s;
      rd += s.read_s;
      wr += s.write_s;
    }
  }
  st.counters["params_M"] = double(n) / 1e6;
  st.counters["resident_MiB"] = double(opt->memory().peak()) / (1 << 20);
  if (swap) {
    st.counters["hidden_pct"] = io > 0 ? 100.0 * hidden / io : 100.0;
    // At most min(compute, I/O) of the I/O time can hide behind compute.
    st.counters["hideable_pct"] = io > 0 ? 100.0 * std::min(io, compute) / io : 100.0;
    // Per step: the caller's update time and the loader's and storer's busy times; the
    // pipeline cannot beat the largest of the three (spec section 4).
    double it = double(st.iterations());
    st.counters["compute_ms"] = 1e3 * compute / it;
    st.counters["read_ms"] = 1e3 * rd / it;
    st.counters["write_ms"] = 1e3 * wr / it;
    st.counters["io_ms"] = 1e3 * io / it;
    st.SetLabel(std::string(trex::optim::to_string(swap->backend())) +
                (swap->direct() ? " O_DIRECT" : " buffered"));
  } else {
    st.SetLabel("in memory");
  }
}
BENCHMARK(BM_OptimizerStep)
    ->Args({0, 0, 0})
    ->Args({1, 3, 1})
    ->Args({1, 2, 1})
    ->Args({1, 3, 4})
    ->Args({3, 3, 1})
    ->Args({4, 3, 4})
    ->Args({5, 3, 1})
    ->Args({5, 2, 1})
    ->Args({2, 3, 4})
    ->ArgNames({"kind", "slots", "chunkM"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::fprintf(stderr, "probing STREAM triad (trex hw probe, full run)...\n");
  trex::core::ProbeResult r = trex::core::probe_hardware({});
  g_triad = r.stream.triad;
  std::fprintf(stderr, "triad %.1f GB/s (%d threads, %lld MiB arrays)\n", g_triad / 1e9,
               r.stream.threads, (long long)(r.stream.array_bytes >> 20));
  benchmark::AddCustomContext("probed_triad_GBps", std::to_string(g_triad / 1e9));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
