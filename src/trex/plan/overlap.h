// How much communication a schedule leaves exposed (docs/plan.md, "Overlap rules").
#pragma once

#include <algorithm>

#include "trex/plan/stack.h"

namespace trex::plan {

// EP all-to-all of one micro-batch on one rank (`a2a` seconds, forward and backward). With an
// A2A-overlapping schedule (1F1B with A2A overlap, DualPipe) the exchange of one micro-batch
// runs under the computation of another, so it hides behind the compute of the steady-state
// micro-batches: capacity = steady x compute, steady being the share of micro-batches outside
// warm-up and cool-down. What is hidden still costs `sm_fraction` of it, the SMs the
// communication kernels take from the computation (DeepSeek-V3: 20 of 132). Without such a
// schedule only the stated `a2a_overlap` share is hidden.
inline double exposed_a2a(double a2a, double compute, double steady, MoeOverlap schedule, double a2a_overlap,
                          double sm_fraction) {
  if (schedule == MoeOverlap::kNone) return a2a * (1 - a2a_overlap);
  double hidden = std::min(a2a, steady * compute);
  return (a2a - hidden) + sm_fraction * hidden;
}

// ZeRO-3/FSDP traffic of one micro-batch (`comm` seconds: gathers for forward and backward,
// gradient reduce-scatter) against its `compute`. With prefetch the next layer's gather runs
// under this layer's compute: the excess over the compute and the first layer's gathers
// (forward and backward, `gather` / `layers` each) are exposed. Without it every gather waits.
inline double exposed_zero3(double comm, double compute, double gather, double layers, bool prefetch) {
  if (!prefetch) return comm;
  return std::max(0.0, comm - compute) + 2 * gather / std::max(1.0, layers);
}

// Steady-state share of m micro-batches under a pipeline of pp stages (1F1B warm-up and
// cool-down excluded): (m - min(m, pp)) / m.
inline double steady_share(long m, long pp) {
  return m > 0 ? double(m - std::min(m, pp)) / double(m) : 0;
}

}  // namespace trex::plan
