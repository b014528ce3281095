// One token's MoE routing, shared by the training/prefill layer (moe.cc) and the decode step
// (moe_decode.cc) so that both route a token to the same experts with the same weights, bit for
// bit (see moe.h for the definition):
//   s = sqrt(softplus(l)) of the E gate logits;
//   sel = the K experts of largest s + bias (K passes of arg-max, strict '>' so ties keep the
//         lower index), or the hash table's row for the token;
//   w_k = gamma s_{sel_k} / sum_k' s_{sel_k'}.
// Defined out of line (moe_route.cc), so both callers run the same compiled code.
#pragma once

#include <cstdint>

namespace trex::model {

// softplus without overflow: for large l, log1p(exp(l)) = l to fp32 precision.
float moe_softplus(float l);

// logits [E]; bias [E] (selection only; unread when hash_sel is given); hash_sel [K] the token's
// row of the hash table, or nullptr for score routing. Writes scores [E], sel [K], weights [K].
// REQUIRES: 1 <= K <= E.
void route_token(const float* logits, int64_t E, int64_t K, const float* bias,
                 const int32_t* hash_sel, float gamma, float* scores, int32_t* sel,
                 float* weights);

}  // namespace trex::model
