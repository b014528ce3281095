#include "trex/profile/roofline.h"

#include <algorithm>

namespace trex::profile {

std::optional<Roofline> roofline_of(const core::HwDescription& hw) {
  Roofline r;
  r.device = hw.device.name;
  if (hw.device.kind == "cpu") {
    r.peak_flops = hw.peak.flops_fp32.value;
    r.peak_name = "peak.flops_fp32";
  } else {
    r.peak_flops = hw.peak.flops_bf16.value;
    r.peak_name = "peak.flops_bf16";
  }
  if (hw.stream && hw.stream->triad && hw.stream->triad->value > 0) {
    r.bytes_per_s = hw.stream->triad->value;
    r.bandwidth_name = "stream.triad";
  } else {
    const core::HwMemory& m = hw.device_memory();
    if (!m.bw_read) return std::nullopt;
    r.bytes_per_s = m.bw_read->value;
    r.bandwidth_name = "memory " + m.name + " bw_read";
  }
  if (!(r.peak_flops > 0) || !(r.bytes_per_s > 0)) return std::nullopt;
  return r;
}

RooflinePoint place_on_roofline(const Roofline& roof, double flops, double bytes, double measured_us) {
  RooflinePoint p;
  p.intensity = bytes > 0 ? flops / bytes : 0;
  double compute_us = flops / roof.peak_flops * 1e6, memory_us = bytes / roof.bytes_per_s * 1e6;
  p.compute_bound = compute_us >= memory_us;
  p.bound_us = std::max(compute_us, memory_us);
  p.roof_fraction = measured_us > 0 ? p.bound_us / measured_us : 0;
  return p;
}

}  // namespace trex::profile
