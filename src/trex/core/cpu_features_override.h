// Test-only: makes cpu_features() report other features while an object lives, so that kernel
// paths this CPU would never take (AVX-512 without AVX512_BF16 on a CPU that has it) run in tests.
//
// Why a scope and not a flag: a kernel reads cpu_features() once per call, outside its loops, so
// the override costs the hot path one relaxed pointer load and nothing else. Only what kernels
// read per call changes; the cached best ISA (best_isa()) does not, so clear flags only, never set
// ones the CPU lacks. Not thread-safe against kernels running on other threads while the scope
// opens or closes: open it before the kernels run, as tests do.
#pragma once

#include "trex/core/cpu_features.h"

namespace trex::core {

class ScopedCpuFeaturesForTest {
 public:
  explicit ScopedCpuFeaturesForTest(const CpuFeatures& features);
  ~ScopedCpuFeaturesForTest();
  ScopedCpuFeaturesForTest(const ScopedCpuFeaturesForTest&) = delete;
  ScopedCpuFeaturesForTest& operator=(const ScopedCpuFeaturesForTest&) = delete;

 private:
  CpuFeatures features_;
  const CpuFeatures* saved_;
};

}  // namespace trex::core
