// The roofline a kernel is placed on (spec/hardware-and-kernels.md section 5): the device's
// dense compute peak and its memory bandwidth, from a hardware description (configs/hw/*.toml or
// the file `trex hw probe` writes).
#pragma once

#include <optional>
#include <string>

#include "trex/core/hw_description.h"

namespace trex::profile {

struct Roofline {
  std::string device;
  double peak_flops = 0;         // FLOP/s
  std::string peak_name;         // "peak.flops_fp32", ...
  double bytes_per_s = 0;        // B/s
  std::string bandwidth_name;    // "stream.triad", "memory HBM3e bw_read", ...
  double ridge() const { return peak_flops / bytes_per_s; }  // FLOP/byte
};

// CPUs: the fp32 peak (trex computes in fp32 from bf16 storage; spec section 2) and the STREAM
// triad when the file has one; NPUs and GPUs: the bf16 peak and the device memory's read
// bandwidth. nullopt when the description has no bandwidth to draw the roof with.
std::optional<Roofline> roofline_of(const core::HwDescription& hw);

// Where a kernel with these totals sits: the time the roof allows, and which roof binds.
struct RooflinePoint {
  double intensity = 0;      // FLOP/byte (0 when no flops)
  double bound_us = 0;       // max(flops / peak, bytes / bandwidth)
  double roof_fraction = 0;  // bound_us / measured time: 1 = on the roof
  bool compute_bound = false;
};
RooflinePoint place_on_roofline(const Roofline& roof, double flops, double bytes, double measured_us);

}  // namespace trex::profile
