// The per-token n x n part of the mHC pre-projection, shared by the fused kernel and the tests:
// the gates and the Sinkhorn mix from the projected values m, and their backward. Internal to
// src/trex/kernels (mhc.cc, mhc_ref.cc) and tests/kernels.
#pragma once

#include <cstdint>

#include "trex/kernels/mhc.h"

namespace trex::kernels::mhc_detail {

// Floats of the Sinkhorn trace: P, then the 2 iters matrices M_0 = P + eps .. M_{2 iters - 1}.
inline int64_t trace_floats(const MhcShape& sh) { return int64_t(2 * sh.iters + 1) * sh.n * sh.n; }

// From m [R]: pre, post [n], C [n n]; sig_a, sig_c [n] and trace (trace_floats) for the backward.
void mix_forward(const float* m, const float* b, const float* scale, const MhcShape& sh,
                 float* pre, float* post, float* C, float* sig_a, float* sig_c, float* trace);

// dm [R] and the per-token parts of db [R] and dscale [3] from dpre, dpost [n] and dC [n n],
// given m and what mix_forward left in sig_a, sig_c and trace.
void mix_backward(const float* m, const float* scale, const float* sig_a, const float* sig_c,
                  const float* trace, const float* dpre, const float* dpost, const float* dC,
                  const MhcShape& sh, float* dm, float* db, float* dscale);

}  // namespace trex::kernels::mhc_detail
