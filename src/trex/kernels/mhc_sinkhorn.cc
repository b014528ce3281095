// The per-token gates and Sinkhorn mix of mHC (see mhc.h for the formulas). The backward walks
// the 2 iters - 1 normalisation steps in reverse over the recorded trace:
//   column step C' = C / (u + eps), u_k = sum_j C_jk: dC_jk = (dC'_jk - sum_i dC'_ik C'_ik) / (u_k + eps)
//   row step    C' = C / (v + eps), v_j = sum_k C_jk: dC_jk = (dC'_jk - sum_l dC'_jl C'_jl) / (v_j + eps)
//   start       C = P + eps, P = rowsoftmax(Z):       dZ_jk = P_jk (dC_jk - sum_l dC_jl P_jl)
#include "trex/kernels/mhc_sinkhorn.h"

#include <algorithm>
#include <cmath>

namespace trex::kernels::mhc_detail {
namespace {

float sigmoid(float z) { return 1.f / (1.f + std::exp(-z)); }

// Step k of the normalisation: column steps at even k, row steps at odd k.
bool column_step(int k) { return k % 2 == 0; }

}  // namespace

template <int W>
void mix_forward(const float* m, const float* b, const float* scale, const MhcShape& sh,
                 float* pre, float* post, float* C, float* sig_a, float* sig_c, float* trace) {
  const int n = sh.n, nn = n * n;
  for (int i = 0; i < n; ++i)
    for (int l = 0; l < W; ++l) {
      sig_a[i * W + l] = sigmoid(m[i * W + l] * scale[0] + b[i]);
      sig_c[i * W + l] = sigmoid(m[(n + i) * W + l] * scale[1] + b[n + i]);
      pre[i * W + l] = sig_a[i * W + l] + sh.eps;
      post[i * W + l] = 2.f * sig_c[i * W + l];
    }
  float* P = trace;
  for (int j = 0; j < n; ++j) {
    float z[kMhcMaxStreams * W], mx[W], sum[W];
    for (int l = 0; l < W; ++l) mx[l] = -INFINITY, sum[l] = 0.f;
    for (int k = 0; k < n; ++k) {
      const int q = 2 * n + j * n + k;
      for (int l = 0; l < W; ++l) {
        z[k * W + l] = m[q * W + l] * scale[2] + b[q];
        mx[l] = std::max(mx[l], z[k * W + l]);
      }
    }
    for (int k = 0; k < n; ++k)
      for (int l = 0; l < W; ++l) sum[l] += (z[k * W + l] = std::exp(z[k * W + l] - mx[l]));
    for (int k = 0; k < n; ++k)
      for (int l = 0; l < W; ++l) P[(j * n + k) * W + l] = z[k * W + l] / sum[l];
  }
  float* M = trace + nn * W;
  for (int q = 0; q < nn * W; ++q) M[q] = P[q] + sh.eps;
  const int steps = 2 * sh.iters - 1;
  for (int s = 0; s < steps; ++s) {
    const float* in = M + s * nn * W;
    float* out = M + (s + 1) * nn * W;
    for (int a = 0; a < n; ++a) {
      float sum[W], inv[W];
      for (int l = 0; l < W; ++l) sum[l] = 0.f;
      for (int c = 0; c < n; ++c) {
        const int q = column_step(s) ? c * n + a : a * n + c;
        for (int l = 0; l < W; ++l) sum[l] += in[q * W + l];
      }
      for (int l = 0; l < W; ++l) inv[l] = 1.f / (sum[l] + sh.eps);
      for (int c = 0; c < n; ++c) {
        const int q = column_step(s) ? c * n + a : a * n + c;
        for (int l = 0; l < W; ++l) out[q * W + l] = in[q * W + l] * inv[l];
      }
    }
  }
  std::copy(M + steps * nn * W, M + (steps + 1) * nn * W, C);
}

// The sums of products are written as fma: left to contraction, GCC fused some of them in the
// one-token code and not in the 16-lane code (and the lanes must give the one-token bits).
template <int W>
void mix_backward(const float* m, const float* scale, const float* sig_a, const float* sig_c,
                  const float* trace, const float* dpre, const float* dpost, const float* dC,
                  const MhcShape& sh, float* dm, float* db, float* dscale) {
  const int n = sh.n, nn = n * n;
  float g[kMhcMaxStreams * kMhcMaxStreams * W], prev[kMhcMaxStreams * kMhcMaxStreams * W];
  std::copy(dC, dC + nn * W, g);
  const float* M = trace + nn * W;
  for (int s = 2 * sh.iters - 2; s >= 0; --s) {
    const float* in = M + s * nn * W;
    const float* out = M + (s + 1) * nn * W;
    for (int a = 0; a < n; ++a) {
      float sum[W], dot[W], inv[W];
      for (int l = 0; l < W; ++l) sum[l] = 0.f, dot[l] = 0.f;
      for (int c = 0; c < n; ++c) {
        const int q = column_step(s) ? c * n + a : a * n + c;
        for (int l = 0; l < W; ++l) {
          sum[l] += in[q * W + l];
          dot[l] = std::fma(g[q * W + l], out[q * W + l], dot[l]);
        }
      }
      for (int l = 0; l < W; ++l) inv[l] = 1.f / (sum[l] + sh.eps);
      for (int c = 0; c < n; ++c) {
        const int q = column_step(s) ? c * n + a : a * n + c;
        for (int l = 0; l < W; ++l) prev[q * W + l] = (g[q * W + l] - dot[l]) * inv[l];
      }
    }
    std::copy(prev, prev + nn * W, g);
  }
  const float* P = trace;
  float ds[3 * W];
  for (int l = 0; l < 3 * W; ++l) ds[l] = 0.f;
  for (int j = 0; j < n; ++j) {
    float dot[W];
    for (int l = 0; l < W; ++l) dot[l] = 0.f;
    for (int k = 0; k < n; ++k)
      for (int l = 0; l < W; ++l)
        dot[l] = std::fma(g[(j * n + k) * W + l], P[(j * n + k) * W + l], dot[l]);
    for (int k = 0; k < n; ++k) {
      const int r = 2 * n + j * n + k;
      for (int l = 0; l < W; ++l) {
        const float dz = P[(j * n + k) * W + l] * (g[(j * n + k) * W + l] - dot[l]);
        db[r * W + l] = dz;
        dm[r * W + l] = dz * scale[2];
        ds[2 * W + l] = std::fma(dz, m[r * W + l], ds[2 * W + l]);
      }
    }
  }
  for (int i = 0; i < n; ++i)
    for (int l = 0; l < W; ++l) {
      const float sa = sig_a[i * W + l], sc = sig_c[i * W + l];
      const float da = dpre[i * W + l] * sa * (1.f - sa);
      const float dc = dpost[i * W + l] * 2.f * sc * (1.f - sc);
      db[i * W + l] = da;
      db[(n + i) * W + l] = dc;
      dm[i * W + l] = da * scale[0];
      dm[(n + i) * W + l] = dc * scale[1];
      ds[l] = std::fma(da, m[i * W + l], ds[l]);
      ds[W + l] = std::fma(dc, m[(n + i) * W + l], ds[W + l]);
    }
  std::copy(ds, ds + 3 * W, dscale);
}

#define TREX_MIX(W)                                                                               \
  template void mix_forward<W>(const float*, const float*, const float*, const MhcShape&, float*, \
                               float*, float*, float*, float*, float*);                           \
  template void mix_backward<W>(const float*, const float*, const float*, const float*,           \
                                const float*, const float*, const float*, const float*,           \
                                const MhcShape&, float*, float*, float*);
TREX_MIX(1)
TREX_MIX(kMixLanes)
#undef TREX_MIX

}  // namespace trex::kernels::mhc_detail
