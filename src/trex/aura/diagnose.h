// Regime diagnosis (spec/hardware-and-kernels.md section 7, CPU form): from a kernel call's
// byte and FLOP counts, the roofline of the machine and one measured time, the share of the
// measured time each stage's bound explains:
//   compute  FLOPs (or vector lane-ops) / peak,   load  bytes in / bw,   store  bytes out / bw,
// where bw is that of the level the working set lives in. The largest share above 0.5 names the
// regime; when none is, the time is not explained by any stage and the kernel is called
// latency-bound (issue, synchronisation, scheduling: what more rows per block, fewer blocks or
// a different thread split move). Each regime lists the kernel's parameters that can move it.
#pragma once

#include <string>
#include <vector>

#include "trex/aura/hardware.h"
#include "trex/aura/target.h"

namespace trex::aura {

struct Diagnosis {
  double seconds = 0;                         // measured
  double t_compute = 0, t_load = 0, t_store = 0;  // bounds
  double compute = 0, load = 0, store = 0;    // bound / measured
  std::string level;                          // where the working set lives: L2, L3, memory
  std::string regime;                         // compute, load, store, latency
  std::vector<std::string> levers;            // parameters that move it
  std::string text() const;                   // one line
};

Diagnosis diagnose(const TuneTarget& t, const AuraHardware& hw, double seconds);

}  // namespace trex::aura
