#include "trex/model/moe_route.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace trex::model {

float moe_softplus(float l) { return l > 20.f ? l : std::log1p(std::exp(l)); }

void route_token(const float* logits, int64_t E, int64_t K, const float* bias,
                 const int32_t* hash_sel, float gamma, float* scores, int32_t* sel,
                 float* weights) {
  for (int64_t e = 0; e < E; ++e) scores[e] = std::sqrt(moe_softplus(logits[e]));
  if (hash_sel) {
    std::memcpy(sel, hash_sel, sizeof(int32_t) * size_t(K));
  } else {
    for (int64_t k = 0; k < K; ++k) {
      int32_t best = -1;
      float best_v = 0;
      for (int32_t e = 0; e < int32_t(E); ++e) {
        if (std::find(sel, sel + k, e) != sel + k) continue;
        const float v = scores[e] + bias[e];
        if (best < 0 || v > best_v) best = e, best_v = v;
      }
      sel[k] = best;
    }
  }
  float sum = 0;
  for (int64_t k = 0; k < K; ++k) sum += scores[sel[k]];
  for (int64_t k = 0; k < K; ++k) weights[k] = gamma * scores[sel[k]] / sum;
}

}  // namespace trex::model
