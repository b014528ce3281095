// A hand-described AVX2 machine with round figures for the model tests, so they do not depend on
// the host's probe: L1 32 KiB of 8 ways, L2 512 KiB, L3 32 MiB; the L1 reads at twice the FMA
// peak and the L2 at the peak (bytes against FLOPs), the AVX2 peak equal to the peak.
#pragma once

#include "trex/aura/hardware.h"

namespace trex::aura {

inline AuraHardware round_avx2_machine(int threads, double peak_flops, double bw_l3, double bw_mem) {
  AuraHardware h;
  h.name = "test";
  h.isa = "avx2";
  h.threads = threads;
  h.l1_bytes = 32 << 10;
  h.l1_ways = 8;
  h.l2_bytes = 512 << 10;
  h.l3_bytes = 32 << 20;
  h.peak_flops = peak_flops;
  h.peak_avx2 = peak_flops;
  h.bw_mem = bw_mem;
  h.bw_l1 = 2 * peak_flops;
  h.bw_l2 = peak_flops;
  h.bw_l3 = bw_l3;
  return h;
}

}  // namespace trex::aura
