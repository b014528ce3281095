// Unified rotary embedding (DeepSeek-V4): forward and inverse rotation in one kernel, chosen by a
// sign, on interleaved pairs of the last rope_dim dims of each head, in real arithmetic.
//
// Shapes: x, y are [tokens, heads, head_dim] row-major; pos is [tokens] (token t has pos t, a
// compressed entry i of ratio m has pos i m). With o = head_dim - rope_dim, pair p is
// (v[o+2p], v[o+2p+1]), th = pos w_p, and sign s = +1 (forward) or -1 (inverse):
//   y0 = v0 cos(s th) - v1 sin(s th),  y1 = v0 sin(s th) + v1 cos(s th);  dims < o pass through.
// Backward of a rotation by s is the rotation by -s: rope_apply(dy, dx, ..., -s).
// T is float or core::bf16 (storage); arithmetic is fp32 with fp32 cos/sin tables (the angle and
// its cos/sin are computed in double once per table, so large positions lose nothing).
#pragma once

#include <cstdint>
#include <vector>

#include "trex/core/bf16.h"
#include "trex/core/thread_pool.h"

namespace trex::kernels {

// One table per layer. Ratio-0 layers: rope_theta, no YaRN. Ratio>0 layers: compress_rope_theta
// with YaRN (factor 16, original length 65536, beta_fast 32, beta_slow 1), no mscale.
struct RopeFreqConfig {
  int rope_dim = 64;
  double base = 10000;
  bool yarn = false;
  double factor = 16;
  double original_len = 65536;
  double beta_fast = 32;
  double beta_slow = 1;
};

// The YaRN ramp bounds: lo = max(floor(dcorr(beta_fast)), 0), hi = min(ceil(dcorr(beta_slow)),
// rd - 1) (+0.001 when equal), dcorr(r) = rd ln(L_orig / (2 pi r)) / (2 ln base).
void yarn_bounds(const RopeFreqConfig& c, double* lo, double* hi);

// w'_p for p < rope_dim / 2: w_p = base^(-2p/rd), blended with w_p / factor by the YaRN ramp.
std::vector<double> rope_frequencies(const RopeFreqConfig& c);

// cos and sin of pos w_p for pos < max_pos, laid out for the interleaved kernel: row pos has
// rope_dim floats, cos: (c_p, c_p) per pair, sin: (-s_p, +s_p) per pair, so that a forward
// rotation is y = v * cos + swap_pairs(v) * sin.
struct RopeTable {
  int rope_dim = 0;
  int64_t max_pos = 0;
  std::vector<float> cos, sin;  // [max_pos, rope_dim]
};
RopeTable rope_table(const std::vector<double>& freq, int64_t max_pos);

// sign: +1 forward, -1 inverse. REQUIRES: rope_dim even, rope_dim <= head_dim,
// 0 <= pos[t] < table.max_pos; y does not alias x.
template <class T>
void rope_apply(const T* x, T* y, const int64_t* pos, int64_t tokens, int64_t heads,
                int64_t head_dim, const RopeTable& table, int sign,
                core::ThreadPool* pool = nullptr);

// The eager chain (slice, strided even/odd gathers, gathered cos/sin, six multiplies and adds,
// interleave, concatenate), one fresh temporary per op: baseline and test oracle.
template <class T>
void rope_apply_ref(const T* x, T* y, const int64_t* pos, int64_t tokens, int64_t heads,
                    int64_t head_dim, const RopeTable& table, int sign,
                    core::ThreadPool* pool = nullptr);

}  // namespace trex::kernels
