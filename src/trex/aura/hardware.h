// The machine as the tuner's models see it: cache capacities, bandwidth per level, peak FLOP/s.
#pragma once

#include <cstdint>
#include <string>

namespace trex::aura {

struct AuraHardware {
  std::string name;            // CPU model
  std::string isa;             // widest supported: "avx512", "avx2", "scalar"
  int threads = 1;             // threads the kernels run on
  int64_t l1_bytes = 32 << 10, l2_bytes = 1 << 20, l3_bytes = 8 << 20;  // per core (L3 shared)
  int l1_ways = 8;
  double peak_flops = 0;       // fp32 FMA peak of `threads` cores, FLOP/s (widest ISA)
  double peak_avx2 = 0;        // the same with 256-bit FMAs (0: unknown, taken as peak_flops / 2)
  double bw_mem = 0;           // STREAM triad of the device, bytes/s
  double bw_l1 = 0, bw_l2 = 0, bw_l3 = 0;  // read bandwidth of one core from each level
  // Non-temporal stores' measured gain: triad_nt / triad of the description's STREAM run, and the
  // threads that run used (0: not measured). The row model credits it only at that thread count.
  double nt_gain = 0;
  int nt_threads = 0;
  // The performance models' per-event times (target.cc): no probe measures them; defaults
  // fitted on earlier tables, replaced where a calibration (calibrate.h) fits them to skills.
  double gemm_call_line_s = 1.45e-9;  // a GEMM micro-kernel call, per 64-byte line of its C tile
  double gemm_pool_job_s = 5e-6;      // GEMM's one pool job a call on more than one thread
  double job_s = 1e-6;                // a row kernel's block, a work-split kernel's parallel job
  // The row model's non-temporal write against a normal store's: its factor (1 / the probe's
  // triad_nt gain where credited, else 1.02) times this; 1 unless a calibration fitted it.
  double nt_write_scale = 1;
  std::string source;          // where the figures came from

  // "avx512 l1=48K/12 l2=2048K l3=491520K t2": what a skill was measured on.
  std::string features() const;
};

// From a hardware description (`trex hw probe` writes one; path may be empty: then
// ./this-machine.toml when present, else a quick probe of about a second). Caches missing from
// the description come from sysfs; per-level bandwidths missing are estimated from the triad.
// Throws InputError for an unreadable or non-CPU description.
AuraHardware load_hardware(const std::string& path, int threads);

}  // namespace trex::aura
