// The per-token n x n part of the mHC pre-projection, shared by the fused kernel and the tests:
// the gates and the Sinkhorn mix from the projected values m, and their backward. Internal to
// src/trex/kernels (mhc.cc, mhc_ref.cc) and tests/kernels.
//
// Each function runs W tokens side by side, one per lane: every array holds W values per element,
// element e of token l at [e * W + l] (b and scale are shared). W = 1 is one token (the forward
// pass, decoding); the backward takes kMixLanes tokens at a time, which the compiler turns into
// vector instructions (the 2 iters - 1 normalisation steps of 16 tokens in the time of about
// one). Each lane performs exactly the one-token operations in the one-token order, so a token's
// results do not depend on W or on its lane (tested).
#pragma once

#include <cstdint>

#include "trex/kernels/mhc.h"

namespace trex::kernels::mhc_detail {

inline constexpr int kMixLanes = 16;

// Floats of the Sinkhorn trace of one token: P, then the 2 iters matrices M_0 = P + eps ..
// M_{2 iters - 1}.
inline int64_t trace_floats(const MhcShape& sh) { return int64_t(2 * sh.iters + 1) * sh.n * sh.n; }

// From m [R]: pre, post [n], C [n n]; sig_a, sig_c [n] and trace (trace_floats) for the backward.
template <int W = 1>
void mix_forward(const float* m, const float* b, const float* scale, const MhcShape& sh,
                 float* pre, float* post, float* C, float* sig_a, float* sig_c, float* trace);

// dm [R] and the per-token parts of db [R] and dscale [3] from dpre, dpost [n] and dC [n n],
// given m and what mix_forward left in sig_a, sig_c and trace.
template <int W = 1>
void mix_backward(const float* m, const float* scale, const float* sig_a, const float* sig_c,
                  const float* trace, const float* dpre, const float* dpost, const float* dC,
                  const MhcShape& sh, float* dm, float* db, float* dscale);

}  // namespace trex::kernels::mhc_detail
