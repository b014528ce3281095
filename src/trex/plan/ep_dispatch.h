// How much of the EP all-to-all crosses the scale-out network under a hierarchical dispatcher.
//
// A plain all-to-all (NCCL, Megatron-Core's "alltoall" dispatcher) sends one copy of a token
// per (token, expert) pair: of its top-k copies, k (g - D) / g leave the scale-up domain of D
// ranks (g ranks in the EP group, routing uniform). DeepSeek-V3's dispatch kernels (arXiv
// 2412.19437 section 3.2.2: a token crosses IB once to the GPU with the same in-node index on
// each target node and is forwarded there over NVLink), DeepEP's normal kernels built from
// them, and NVIDIA's HybridEP send a token once per remote domain that holds any of its
// experts, and the combine sums inside the domain before it crosses back. With the E experts
// spread evenly over N = g / D domains and a token's k distinct experts drawn uniformly (forced
// load balancing), a given other domain holds none of them with probability
//   P0 = prod_{i < k} (E - E/N - i) / (E - i),
// so (N - 1)(1 - P0) copies leave the domain instead of k (g - D) / g.
#pragma once

#include <algorithm>

namespace trex::plan {

// Copies leaving the scale-up domain with per-domain deduplication over copies without it
// (<= 1); 1 when the group fits in one domain. g: EP ranks, domain: EP ranks per domain.
inline double dedup_scale_out_factor(long g, long domain, double top_k, double experts) {
  if (domain >= g || domain < 1 || top_k < 1 || experts < top_k) return 1;
  double n = double(g) / double(domain);
  double p0 = 1;
  for (int i = 0; i < int(top_k); ++i) p0 *= std::max(0.0, experts - experts / n - i) / (experts - i);
  double dedup = (n - 1) * (1 - p0);
  double plain = top_k * double(g - domain) / double(g);
  return plain > 0 ? std::min(1.0, dedup / plain) : 1;
}

// EP ranks one token reaches, its own rank included, when its top_k distinct experts are drawn
// uniformly from `experts` spread evenly over g ranks: g (1 - P), P the chance that a given rank
// holds none of them, prod_{i < k} (E - E/g - i) / (E - i). DeepEP's and HybridEP's dispatch
// sends a token once to each such rank (the plain all-to-all sends top_k copies); their
// measured rates count exactly these bytes (cluster.h, DispatcherRate).
inline double ranks_per_token(long g, double top_k, double experts) {
  if (g <= 1 || top_k < 1 || experts < top_k) return 1;
  double p0 = 1;
  for (int i = 0; i < int(top_k); ++i) p0 *= std::max(0.0, experts - experts / double(g) - i) / (experts - i);
  return double(g) * (1 - p0);
}

}  // namespace trex::plan
