// Loading the tuner's view of the machine from a hardware description or a quick probe.
#include "trex/aura/hardware.h"

#include <algorithm>

#include "trex/core/cpu_features.h"
#include "trex/core/hw_description.h"
#include "trex/core/hw_probe.h"
#include "trex/kernels/gemm.h"
#include "trex/util/error.h"

namespace trex::aura {

std::string AuraHardware::features() const {
  return isa + " l1=" + std::to_string(l1_bytes >> 10) + "K/" + std::to_string(l1_ways) +
         " l2=" + std::to_string(l2_bytes >> 10) + "K l3=" + std::to_string(l3_bytes >> 10) +
         "K t" + std::to_string(threads);
}

AuraHardware load_hardware(const std::string& path_in, int threads) {
  AuraHardware h;
  core::HwDescription d = core::this_machine_description(path_in, &h.source);
  const std::string path = h.source;
  if (h.source.rfind("quick probe", 0) == 0) h.source = "quick probe";
  const int cores = std::max(1, int(d.device.cores_vector.value));
  h.threads = threads > 0 ? threads : cores;
  h.name = d.device.name;
  h.isa = core::to_string(core::best_isa());
  kernels::CacheSizes cs = kernels::read_cache_sizes();
  h.l1_bytes = cs.l1_bytes;
  h.l1_ways = cs.l1_ways;
  h.l2_bytes = cs.l2_bytes;
  h.l3_bytes = cs.l3_bytes;
  int level = 0;
  for (const core::HwMemory& m : d.memory) {
    if (m.scope == "device") {
      if (m.bw_read) h.bw_mem = m.bw_read->value;
      continue;
    }
    ++level;
    int64_t size = int64_t(m.size_bytes.value);
    double bw = m.bw_read ? m.bw_read->value : 0;
    if (level == 1) {
      if (size > 0) h.l1_bytes = size;
      if (m.ways) h.l1_ways = int(m.ways->value);
      h.bw_l1 = bw;
    } else if (level == 2) {
      if (size > 0) h.l2_bytes = size;
      h.bw_l2 = bw;
    } else if (level == 3) {
      if (size > 0) h.l3_bytes = size;
      h.bw_l3 = bw;
    }
  }
  if (d.stream && d.stream->triad) h.bw_mem = d.stream->triad->value;
  if (d.stream && d.stream->triad && d.stream->triad_nt && d.stream->triad->value > 0) {
    h.nt_gain = d.stream->triad_nt->value / d.stream->triad->value;
    h.nt_threads = int(d.stream->threads.value);
  }
  if (h.bw_mem <= 0) throw InputError(path, 0, "stream.triad: needed for the memory roofline");
  const double per_core = d.peak.flops_fp32_one_core ? d.peak.flops_fp32_one_core->value
                                                     : d.peak.flops_fp32.value / cores;
  h.peak_flops = per_core * std::min(h.threads, cores);
  for (const core::HwFmaPeak& f : d.fma_peaks)
    if (f.isa == "avx2") h.peak_avx2 = f.flops_one_core.value * std::min(h.threads, cores);
  if (h.peak_avx2 <= 0) h.peak_avx2 = h.isa == "avx512" ? h.peak_flops / 2 : h.peak_flops;
  // Typical ratios where the description lacks a level (one core, x86): L1 ~ 16x, L2 ~ 8x,
  // L3 ~ 3x the device triad.
  if (h.bw_l1 <= 0) h.bw_l1 = 16 * h.bw_mem;
  if (h.bw_l2 <= 0) h.bw_l2 = 8 * h.bw_mem;
  if (h.bw_l3 <= 0) h.bw_l3 = 3 * h.bw_mem;
  return h;
}

}  // namespace trex::aura
