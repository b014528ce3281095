// How much communication a schedule leaves exposed (docs/plan.md, "Overlap rules").
#pragma once

#include <algorithm>

#include "trex/plan/stack.h"

namespace trex::plan {

// EP all-to-all of one micro-batch on one rank (`a2a` seconds, forward and backward). Under
// DualPipe the exchange of one micro-batch runs under the computation of another, its backward
// chunks split into input and weight gradients so the schedule can place compute where the
// exchange needs it (arXiv 2412.19437 section 3.2.1, Figure 4): it hides behind the compute of
// the steady-state micro-batches as a whole, capacity = steady x compute, steady being the share
// of micro-batches outside warm-up and cool-down. (Combined 1F1B pairs node by node instead:
// exposed_a2a_paired below.) What is hidden still costs `sm_fraction` of it, the SMs the
// communication kernels take from the computation (DeepSeek-V3: 20 of 132). Without such a
// schedule only the stated `a2a_overlap` share is hidden.
inline double exposed_a2a(double a2a, double compute, double steady, MoeOverlap schedule, double a2a_overlap,
                          double sm_fraction) {
  if (schedule == MoeOverlap::kNone) return a2a * (1 - a2a_overlap);
  double hidden = std::min(a2a, steady * compute);
  return (a2a - hidden) + sm_fraction * hidden;
}

// One MoE layer's compute and all-to-all for one micro-batch on one rank (seconds), split as
// Megatron-Core's combined 1F1B schedule splits a layer into nodes (docs/user-guide/features/
// moe_a2a_overlap.md): `attn` = attention, norms, router and dispatch preprocessing (and the
// shared experts), `expert` = the routed experts; `dispatch` and `combine` = one all-to-all each
// way, forward (the backward of each moves a BF16 gradient of the combine's size).
struct MoeLayerPhases {
  double attn_fwd = 0, attn_bwd = 0, expert_fwd = 0, expert_bwd = 0;
  double dispatch = 0, combine = 0;
  double comm_fwd() const { return dispatch + combine; }
  double comm_bwd() const { return 2 * combine; }
};

// Exposed all-to-all of one MoE layer under combined 1F1B, where the forward of micro-batch
// i+1 is paired with the backward of micro-batch i. The documented issue order pairs each
// communication node with one compute node of the other micro-batch:
//   B.combine  under F.attn,     F.dispatch under B.expert,
//   B.dispatch under F.expert,   F.combine  under B.attn,
// and each phase ends when both streams finish it. While they overlap, the communication
// kernels hold SMs and the compute runs `sm_fraction` slower (arXiv 2603.07685 section 4.2.3:
// DeepEP with 20 SMs costs the concurrent GEMMs about 20%), so a phase with communication c and
// compute e takes max(c, e + sm_fraction c): exposed max(c - e, sm_fraction c).
// `unpaired` is the share of forward (warm-up) and backward (cool-down) passes that have no
// partner: their exchange is fully exposed.
inline double exposed_a2a_paired(const MoeLayerPhases& p, double unpaired, double sm_fraction) {
  auto phase = [&](double comm, double compute) { return std::max(comm - compute, sm_fraction * comm); };
  double paired = phase(p.combine, p.attn_fwd) + phase(p.dispatch, p.expert_bwd) +
                  phase(p.combine, p.expert_fwd) + phase(p.combine, p.attn_bwd);
  return unpaired * (p.comm_fwd() + p.comm_bwd()) + (1 - unpaired) * paired;
}

// Share of a pipeline rank's forward passes with no backward to pair with under combined
// 1F1B (and, alike, of its backward passes with no forward): the warm-up of rank r of pp.
// Without pipelining only the first forward (and last backward) of m micro-batches; with
// interleaving (vpp > 1) Megatron-Core's warm-up of (pp - r - 1) x 2 + (vpp - 1) x N model
// chunks (N the micro-batch group, `group` 0 = pp), one more under the overlap schedule, out
// of m x vpp; without interleaving pp - r.
inline double unpaired_share(long m, long pp, long vpp, long r, long group = 0) {
  if (m <= 0) return 1;
  const long n = group > 0 ? group : pp;
  double warm = pp <= 1 ? 1.0 : vpp > 1 ? double((pp - r - 1) * 2 + (vpp - 1) * n + 1) : double(pp - r);
  return std::min(1.0, warm / (double(m) * double(std::max<long>(1, vpp))));
}

// Pipeline P2P of one micro-batch on one rank: each of its vpp model chunks sends its output
// forward and its input gradient backward, `p2p` seconds each. Without overlap every send and
// receive waits. Megatron-Core's `overlap_p2p_comm` (interleaved schedules only) runs them
// asynchronously under the non-dependent computation of the 1F1B steady state, where each
// chunk's forward is paired with another chunk's backward; the sends of the warm-up and
// cool-down (`unpaired` of the chunks, unpaired_share) stay exposed (NVIDIA/NeMo
// docs/source/features/optimizations/communication_overlap.rst, "Pipeline-parallel
// Communication Overlap"). A paired send is hidden up to the compute of the chunk it runs
// under: the forward send under a backward chunk (`chunk_bwd`), the backward send under a
// forward chunk (`chunk_fwd`).
inline double exposed_pp(double p2p, long vpp, double chunk_fwd, double chunk_bwd, double unpaired, bool overlap) {
  double all = 2 * double(vpp) * p2p;
  if (!overlap || vpp <= 1) return all;
  double paired = double(vpp) * (std::max(0.0, p2p - chunk_bwd) + std::max(0.0, p2p - chunk_fwd));
  return unpaired * all + (1 - unpaired) * paired;
}

// Share of a rank's model chunks in the warm-up of Megatron-Core's interleaved schedule, whose
// P2P has no paired compute to run under: (pp - r - 1) x 2 + (vpp - 1) x N of m x vpp chunks
// on rank r, N the micro-batch group (`group` 0 = pp; the cool-down mirrors it for the
// backward sends).
inline double interleaved_warmup_share(long m, long pp, long vpp, long r, long group = 0) {
  if (m <= 0 || vpp <= 1) return 1;
  const long n = group > 0 ? group : pp;
  double warm = double((pp - r - 1) * 2 + (vpp - 1) * n);
  return std::min(1.0, warm / (double(m) * double(vpp)));
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
