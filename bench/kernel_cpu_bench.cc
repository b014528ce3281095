// One kernel's fused call by the calling thread's CPU time, median of N calls, at the suite's
// full benchmark shapes or at a chosen shape (make_cases_at's dimensions). Unlike
// kernel_suite_bench, which builds every kernel's full-size cases before timing any, it builds
// only the cases asked for, so two builds (before and after a kernel change) can be run in
// alternation, case by case, within a minute; with TREX_THREADS=1 the CPU time is the kernel's
// own, which a loaded machine perturbs far less than wall time. GB/s counts the case's minimum
// traffic (kernel_suite.h).
//   TREX_THREADS=1 build/kernel_cpu_bench swiglu.bwd 7            # full suite shapes
//   TREX_THREADS=1 build/kernel_cpu_bench mhc.post_bwd 7 2048 4 512
// --gate first runs each case through the kernel gate (check_case) and skips it on failure.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "trex/kernels/kernel_suite.h"

namespace {

double thread_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const bool gate = !args.empty() && args[0] == "--gate";
  if (gate) args.erase(args.begin());
  if (args.size() < 2) {
    std::fprintf(stderr, "usage: kernel_cpu_bench [--gate] KERNEL CALLS [DIM...]\n");
    return 2;
  }
  const int calls = std::atoi(args[1].c_str());
  if (calls < 1) {
    std::fprintf(stderr, "kernel_cpu_bench: CALLS must be >= 1, got '%s'\n", args[1].c_str());
    return 2;
  }
  std::vector<int64_t> dims;
  for (size_t i = 2; i < args.size(); ++i) dims.push_back(std::atoll(args[i].c_str()));
  std::vector<trex::kernels::KernelCase> cases;
  try {
    cases = dims.empty() ? trex::kernels::make_cases(args[0], trex::kernels::SuiteSize::kFull, 1)
                         : trex::kernels::make_cases_at(args[0], dims, 1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernel_cpu_bench: %s\n", e.what());
    return 2;
  }
  for (trex::kernels::KernelCase& c : cases) {
    if (gate) {
      trex::kernels::CheckResult r = trex::kernels::check_case(c);
      if (!r.passed) {
        std::printf("%-18s %-5s %-36s failed the gate: %s\n", c.kernel.c_str(), c.dtype.c_str(),
                    c.shape.c_str(), r.message.c_str());
        continue;
      }
    }
    c.fused();  // warm-up: first-touch page faults and caches
    std::vector<double> t;
    for (int i = 0; i < calls; ++i) {
      const double t0 = thread_cpu_seconds();
      c.fused();
      t.push_back(thread_cpu_seconds() - t0);
    }
    std::sort(t.begin(), t.end());
    const double median = t[t.size() / 2];
    std::printf("%-18s %-5s %-36s cpu %9.3f ms %7.2f GB/s\n", c.kernel.c_str(), c.dtype.c_str(),
                c.shape.c_str(), median * 1e3, c.bytes / median / 1e9);
  }
  return 0;
}
