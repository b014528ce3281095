// The kernel suite behind `trex kernels check|bench`: every kernel's check cases pass the gate on
// three seeds, the quick benchmark shapes pass it too, and the gate itself rejects a kernel that
// skips outputs, one that writes an input, a wrong one and a nondeterministic one.
#include "trex/kernels/kernel_suite.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "trex/core/thread_pool.h"

namespace trex::kernels {
namespace {

TEST(KernelSuite, EveryKernelPassesTheGateOnCheckShapes) {
  core::ThreadPool pool(2);
  for (const std::string& k : suite_kernels()) {
    for (uint32_t seed : {1u, 2u, 3u}) {
      std::vector<KernelCase> cases = make_cases(k, SuiteSize::kCheck, seed, &pool);
      ASSERT_FALSE(cases.empty()) << k;
      for (KernelCase& c : cases) {
        CheckResult r = check_case(c);
        EXPECT_TRUE(r.passed) << k << " " << c.dtype << " " << c.shape << " seed " << seed << ": "
                              << r.message << " (worst " << r.worst << " at " << r.worst_output << ")";
        EXPECT_GT(c.bytes, 0) << k;
      }
    }
  }
}

TEST(KernelSuite, QuickBenchmarkShapesPassTheGate) {
  core::ThreadPool pool(2);
  for (const std::string& k : suite_kernels()) {
    if (k == "gemm") continue;  // the triple-loop reference at 256^3 takes seconds; covered above
    for (KernelCase& c : make_cases(k, SuiteSize::kQuick, 1, &pool)) {
      CheckResult r = check_case(c);
      EXPECT_TRUE(r.passed) << k << " " << c.dtype << " " << c.shape << ": " << r.message;
    }
  }
}

KernelCase rmsnorm_case() {
  return std::move(make_cases("rmsnorm.fwd", SuiteSize::kCheck, 1)[1]);
}

TEST(KernelSuite, GateRejectsBrokenKernels) {
  {
    KernelCase c = rmsnorm_case();
    c.fused = [] {};  // writes nothing: the poison stays
    CheckResult r = check_case(c);
    EXPECT_FALSE(r.passed);
    EXPECT_FALSE(r.outputs_written);
  }
  {
    KernelCase c = rmsnorm_case();
    auto fused = c.fused;
    SuiteBuffer in = c.inputs[0];
    c.fused = [fused, in] {
      fused();
      static_cast<float*>(in.data)[0] += 1.f;  // scribbles on its input
    };
    CheckResult r = check_case(c);
    EXPECT_FALSE(r.passed);
    EXPECT_FALSE(r.inputs_unchanged);
  }
  {
    KernelCase c = rmsnorm_case();
    auto fused = c.fused;
    SuiteBuffer out = c.outputs[0];
    c.fused = [fused, out] {
      fused();
      static_cast<float*>(out.data)[3] *= 1.01f;  // 1% off in one element
    };
    CheckResult r = check_case(c);
    EXPECT_FALSE(r.passed);
    EXPECT_GT(r.worst, 1.0);
  }
  {
    KernelCase c = rmsnorm_case();
    auto fused = c.fused;
    SuiteBuffer out = c.outputs[0];
    auto calls = std::make_shared<int>(0);
    c.fused = [fused, out, calls] {
      fused();
      if (++*calls == 2) static_cast<float*>(out.data)[0] = std::nextafter(static_cast<float*>(out.data)[0], 1e9f);
    };
    CheckResult r = check_case(c);
    EXPECT_FALSE(r.passed);
    EXPECT_FALSE(r.deterministic);
  }
}

TEST(KernelSuite, UnknownKernelIsRejected) {
  EXPECT_THROW(make_cases("no_such_kernel", SuiteSize::kCheck, 1), std::invalid_argument);
}

}  // namespace
}  // namespace trex::kernels
