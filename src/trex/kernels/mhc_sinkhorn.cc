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

void mix_forward(const float* m, const float* b, const float* scale, const MhcShape& sh,
                 float* pre, float* post, float* C, float* sig_a, float* sig_c, float* trace) {
  const int n = sh.n, nn = n * n;
  for (int i = 0; i < n; ++i) {
    sig_a[i] = sigmoid(m[i] * scale[0] + b[i]);
    sig_c[i] = sigmoid(m[n + i] * scale[1] + b[n + i]);
    pre[i] = sig_a[i] + sh.eps;
    post[i] = 2.f * sig_c[i];
  }
  float* P = trace;
  for (int j = 0; j < n; ++j) {
    float z[kMhcMaxStreams], mx = -INFINITY, sum = 0.f;
    for (int k = 0; k < n; ++k) {
      z[k] = m[2 * n + j * n + k] * scale[2] + b[2 * n + j * n + k];
      mx = std::max(mx, z[k]);
    }
    for (int k = 0; k < n; ++k) sum += (z[k] = std::exp(z[k] - mx));
    for (int k = 0; k < n; ++k) P[j * n + k] = z[k] / sum;
  }
  float* M = trace + nn;
  for (int q = 0; q < nn; ++q) M[q] = P[q] + sh.eps;
  const int steps = 2 * sh.iters - 1;
  for (int s = 0; s < steps; ++s) {
    const float* in = M + s * nn;
    float* out = M + (s + 1) * nn;
    for (int a = 0; a < n; ++a) {
      float sum = 0.f;
      for (int c = 0; c < n; ++c) sum += column_step(s) ? in[c * n + a] : in[a * n + c];
      float inv = 1.f / (sum + sh.eps);
      for (int c = 0; c < n; ++c) {
        int q = column_step(s) ? c * n + a : a * n + c;
        out[q] = in[q] * inv;
      }
    }
  }
  std::copy(M + steps * nn, M + (steps + 1) * nn, C);
}

void mix_backward(const float* m, const float* scale, const float* sig_a, const float* sig_c,
                  const float* trace, const float* dpre, const float* dpost, const float* dC,
                  const MhcShape& sh, float* dm, float* db, float* dscale) {
  const int n = sh.n, nn = n * n;
  float g[kMhcMaxStreams * kMhcMaxStreams], prev[kMhcMaxStreams * kMhcMaxStreams];
  std::copy(dC, dC + nn, g);
  const float* M = trace + nn;
  for (int s = 2 * sh.iters - 2; s >= 0; --s) {
    const float* in = M + s * nn;
    const float* out = M + (s + 1) * nn;
    for (int a = 0; a < n; ++a) {
      float sum = 0.f, dot = 0.f;
      for (int c = 0; c < n; ++c) {
        int q = column_step(s) ? c * n + a : a * n + c;
        sum += in[q];
        dot += g[q] * out[q];
      }
      float inv = 1.f / (sum + sh.eps);
      for (int c = 0; c < n; ++c) {
        int q = column_step(s) ? c * n + a : a * n + c;
        prev[q] = (g[q] - dot) * inv;
      }
    }
    std::copy(prev, prev + nn, g);
  }
  const float* P = trace;
  float ds[3] = {0.f, 0.f, 0.f};
  for (int j = 0; j < n; ++j) {
    float dot = 0.f;
    for (int k = 0; k < n; ++k) dot += g[j * n + k] * P[j * n + k];
    for (int k = 0; k < n; ++k) {
      int r = 2 * n + j * n + k;
      float dz = P[j * n + k] * (g[j * n + k] - dot);
      db[r] = dz;
      dm[r] = dz * scale[2];
      ds[2] += dz * m[r];
    }
  }
  for (int i = 0; i < n; ++i) {
    float da = dpre[i] * sig_a[i] * (1.f - sig_a[i]);
    float dc = dpost[i] * 2.f * sig_c[i] * (1.f - sig_c[i]);
    db[i] = da;
    db[n + i] = dc;
    dm[i] = da * scale[0];
    dm[n + i] = dc * scale[1];
    ds[0] += da * m[i];
    ds[1] += dc * m[n + i];
  }
  std::copy(ds, ds + 3, dscale);
}

}  // namespace trex::kernels::mhc_detail
