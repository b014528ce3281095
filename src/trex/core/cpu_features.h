// What the CPU this process runs on can do, asked once.
//
// Features come from CPUID, and a vector extension counts only when the operating system also
// saves its registers (XGETBV), so a feature reported here is safe to execute. Kernels with
// several instruction-set paths pick one with best_isa(); the environment variable TREX_ISA
// (scalar | avx2 | avx512) forces a lower path, so every path can be exercised on purpose on a
// machine that supports a higher one. Forcing a path the CPU lacks falls back to the best one
// that it has.
#pragma once

#include <string>
#include <vector>

namespace trex::core {

struct CpuFeatures {
  bool sse4_2 = false;
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512dq = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  bool avx512_fp16 = false;
  bool amx_tile = false;
  bool amx_bf16 = false;
  bool amx_int8 = false;

  // The set features by their Linux /proc/cpuinfo names, in the order above.
  std::vector<std::string> names() const;
};

// Detected once, then cached; safe to call from any thread.
const CpuFeatures& cpu_features();

// The instruction-set paths trex kernels are written for, lowest first.
enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

const char* to_string(Isa isa);

// kAvx2 needs AVX2 and FMA; kAvx512 needs AVX-512 F, BW, DQ and VL.
bool isa_supported(Isa isa);

// The highest supported path, lowered by TREX_ISA when that is set. An unrecognised TREX_ISA
// value is ignored (the kernels must still run). Decided on the first call, then cached.
Isa best_isa();

// The CPU's model name ("Intel(R) Xeon(R) ..."), from CPUID brand string; "unknown" if absent.
std::string cpu_model_name();

}  // namespace trex::core
