// Losses that grow with the number of devices (docs/plan.md, "Scale-dependent losses").
//
// Stragglers: every step ends in a synchronisation (the gradient reduction), so the step takes
// as long as the slowest of N devices. With per-device step times spread with coefficient of
// variation cv around their mean, the expected maximum of N draws is about
// mean (1 + cv sqrt(2 ln N)) (the Gaussian extreme-value approximation), so the loss grows
// with the logarithm of the scale: at cv = 1%, 3.3% on 256 devices and 4.3% on 12,288. The
// cluster states cv ([scale] straggler_cv); the stack scales it (MegaScale's straggler
// detection and mitigation: < 1).
//
// Collectives across many nodes lose bandwidth to congestion and routing conflicts (ECMP hash
// collisions, MegaScale section 4; Llama 3 section 3.3.4): the scale-out level's efficiency
// is multiplied by (1 - loss)^log2(nodes spanned), the cluster's [scale] bw_loss_per_doubling.
#pragma once

#include <cmath>

#include "trex/plan/cluster.h"
#include "trex/plan/stack.h"

namespace trex::plan {

// Fraction of the step lost to stragglers on `devices` devices.
inline double straggler_loss(const Cluster& c, const StackProfile& stack, long devices) {
  if (devices <= 1 || c.scale.straggler_cv <= 0) return 0;
  return c.scale.straggler_cv * stack.straggler_scale * std::sqrt(2 * std::log(double(devices)));
}

// Multiplier on a link level's bandwidth for a collective spanning `nodes` nodes of it.
inline double scale_bw_factor(const Cluster& c, double nodes) {
  if (nodes <= 1 || c.scale.bw_loss_per_doubling <= 0) return 1;
  return std::pow(1 - c.scale.bw_loss_per_doubling, std::log2(nodes));
}

}  // namespace trex::plan
