// The rates one device's kernels reach under a cluster's efficiency factors and a software
// stack's scales (docs/plan.md, "Efficiency factors"): the cluster states what kernels reach
// on the device, the stack scales it, and nothing exceeds the hardware roof.
#pragma once

#include <algorithm>

#include "trex/plan/cluster.h"
#include "trex/plan/stack.h"

namespace trex::plan {

struct Roofs {
  double matmul = 0;     // FLOP/s of large BF16 GEMMs
  double fp8 = 0;        // FLOP/s of large FP8 GEMMs (0 without an FP8 peak)
  double attention = 0;  // FLOP/s of the attention core
  double simt = 0;       // FLOP/s charged to a misaligned 16-bit GEMM (the device's non-tensor FP32 peak)
  double memory = 0;     // bytes/s of memory-bound kernels
  double launch_s = 0;   // the per-kernel floor
};

inline Roofs roofs(const Cluster& c, const StackProfile& st) {
  Roofs r;
  r.matmul = c.peak_flops * std::min(1.0, c.eff.matmul * st.matmul_scale);
  if (c.device.peak.flops_fp8) r.fp8 = c.device.peak.flops_fp8->value * std::min(1.0, c.eff.fp8_matmul * st.matmul_scale);
  r.simt = c.device.peak.flops_fp32.value * std::min(1.0, c.eff.matmul * st.matmul_scale);
  r.attention = c.peak_flops * std::min(1.0, c.eff.attention * st.attention_scale);
  r.memory = c.hbm_bw * std::min(1.0, c.eff.memory * st.memory_scale);
  r.launch_s = c.eff.launch_s * st.launch_scale;
  return r;
}

}  // namespace trex::plan
