// Every kernel of the suite (src/trex/kernels/kernel_suite.h) at its benchmark shape, fused and
// reference side by side, as Google Benchmark cases, plus the GEMM and sparse attention forward
// at the same thread count for the "attention >= 50% of the GEMM FLOP rate" goal. Each case is
// validated by the suite's gate once before it is timed (a failing case reports an error).
// Counters: bytes_per_second (the case's minimum traffic) and flop_per_second (contractions).
// The GEMM's triple-loop reference is left out (seconds per call); bench/gemm_bench.cc has
// OpenBLAS beside trex's sgemm.
// Reproduce (medians of 3, both sides interleaved so they see the same background load):
//   TREX_THREADS=1 build/kernel_suite_bench --benchmark_repetitions=3
//       --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
// With TREX_THREADS=1 the cpu_time column is the kernel's own CPU time, which a loaded machine
// perturbs far less than wall time.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trex/core/thread_pool.h"
#include "trex/kernels/kernel_suite.h"

namespace {

using trex::kernels::KernelCase;

// Cases are built once (full-size inputs take a while) and kept for every repetition.
std::vector<std::unique_ptr<KernelCase>>& cases() {
  static std::vector<std::unique_ptr<KernelCase>> all;
  return all;
}

void run(benchmark::State& st, KernelCase* c, bool fused) {
  static std::map<KernelCase*, bool> validated;
  if (!validated.count(c)) {
    trex::kernels::CheckResult r = trex::kernels::check_case(*c);
    validated[c] = r.passed;
    if (!r.passed) {
      st.SkipWithError(("failed the gate: " + r.message).c_str());
      return;
    }
  }
  if (!validated[c]) {
    st.SkipWithError("failed the gate");
    return;
  }
  const auto& call = fused ? c->fused : c->ref;
  for (auto _ : st) call();
  st.counters["bytes_per_second"] = benchmark::Counter(c->bytes * double(st.iterations()),
                                                       benchmark::Counter::kIsRate);
  st.counters["flop_per_second"] = benchmark::Counter(c->flops * double(st.iterations()),
                                                      benchmark::Counter::kIsRate);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  for (const std::string& k : trex::kernels::suite_kernels()) {
    for (KernelCase& c : trex::kernels::make_cases(k, trex::kernels::SuiteSize::kFull, 1)) {
      cases().push_back(std::make_unique<KernelCase>(std::move(c)));
      KernelCase* p = cases().back().get();
      std::string name = p->kernel + "/" + p->dtype + "/" + p->shape;
      benchmark::RegisterBenchmark((name + "/fused").c_str(), run, p, true)->UseRealTime()->Unit(benchmark::kMillisecond);
      if (k != "gemm")
        benchmark::RegisterBenchmark((name + "/reference").c_str(), run, p, false)->UseRealTime()->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
