// `trex demo` step: the fused kernel library's gate on every kernel (small shapes, one seed),
// then one model-sized sparse attention forward timed beside its eager reference.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "trex/kernels/kernel_suite.h"

namespace trex::cli {

namespace {

int kernels_demo() {
  using kernels::KernelCase;
  std::printf("trex demo: fused kernels against their eager references\n");
  auto t0 = std::chrono::steady_clock::now();
  int cases = 0, failed = 0;
  std::string first;
  for (const std::string& k : kernels::suite_kernels()) {
    for (KernelCase& c : kernels::make_cases(k, kernels::SuiteSize::kCheck, 1)) {
      kernels::CheckResult r = kernels::check_case(c);
      ++cases;
      if (!r.passed) {
        ++failed;
        if (first.empty()) first = k + " " + c.dtype + " " + c.shape + ": " + r.message;
      }
    }
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("  gate: %d of %d cases of %zu kernels pass (poisoned outputs, inputs unchanged, "
              "tolerance, determinism) in %.2f s\n",
              cases - failed, cases, kernels::suite_kernels().size(), s);
  if (failed) std::printf("  first failure: %s\n", first.c_str());
  for (KernelCase& c : kernels::make_cases("sparse_attention.fwd", kernels::SuiteSize::kQuick, 1)) {
    kernels::CheckResult r = kernels::check_case(c);
    if (!r.passed) {
      std::printf("  sparse attention (%s): FAILED the gate: %s\n", c.shape.c_str(), r.message.c_str());
      return 1;
    }
    kernels::CaseTiming f = kernels::time_call(c.fused, 0.05, 3, 100);
    kernels::CaseTiming g = kernels::time_call(c.ref, 0.05, 1, 100, false);
    std::printf("  sparse attention (%s): fused %.2f ms, eager %.2f ms (%.1fx), %.1f GFLOP/s\n",
                c.shape.c_str(), f.seconds * 1e3, g.seconds * 1e3, g.seconds / f.seconds,
                c.flops / f.seconds / 1e9);
  }
  return failed == 0 ? 0 : 1;
}

const DemoStepRegistration kKernelsDemoStep(60, kernels_demo);

}  // namespace

}  // namespace trex::cli
