// Reference KV compressor: the eager chain over gathered [n, R, hd] tensors (R = 2m for m = 4,
// else m), one fresh temporary per op:
//   forward:  kg = gather(kt); zg = gather(zt); ag = gather(ape); sc = zg + ag (-inf where a row
//             is absent); mx = max(sc, 1); z = sc - mx; e = exp(z); den = sum(e, 1); S = e / den;
//             w = S * kg; k = sum(w, 1)
//   backward: the forward ops again, then g = S * dk[:, None]; diff = kg - k[:, None];
//             dz = g * diff; dkt = scatter(g); dzt = scatter(dz); dape = sum over entries of
//             scatter(dz) into ape rows
#include <cmath>
#include <limits>
#include <vector>

#include "trex/kernels/eager_chain.h"
#include "trex/kernels/kv_compressor.h"

namespace trex::kernels {
namespace {

using eager::Buf;
using eager::map;

struct Gathered {
  int64_t n = 0, R = 0, hd = 0;
  std::vector<int64_t> xoff, aoff;  // [n, R]: kt/zt and ape offsets (-1: absent row)
  Buf kg, sc, S, k;                 // [n, R, hd], [n, R, hd], [n, R, hd], [n, hd]
};

Gathered eager_forward(core::ThreadPool& tp, const float* kt, const float* zt, const float* ape,
                       int64_t s, int64_t hd, int ratio) {
  Gathered g;
  g.n = compressor_entries(s, ratio);
  g.R = ratio == 4 ? 8 : ratio;
  g.hd = hd;
  int64_t n = g.n, R = g.R, C = compressor_width(ratio, hd);
  g.xoff.assign(size_t(n * R), -1);
  g.aoff.assign(size_t(n * R), -1);
  std::vector<CompressorRow> rows(static_cast<size_t>(R));
  for (int64_t i = 0; i < n; ++i) {
    int cnt = compressor_rows(i, ratio, hd, rows.data());
    int64_t first = R - cnt;  // absent rows come first (the missing previous block)
    for (int j = 0; j < cnt; ++j) {
      g.xoff[size_t(i * R + first + j)] = rows[size_t(j)].token * C + rows[size_t(j)].channel_offset;
      g.aoff[size_t(i * R + first + j)] = rows[size_t(j)].ape_row * C + rows[size_t(j)].channel_offset;
    }
  }
  int64_t N = n * R * hd;
  const int64_t* xo = g.xoff.data();
  const int64_t* ao = g.aoff.data();
  g.kg = map(tp, N, [&](int64_t q) { int64_t o = xo[q / hd]; return o < 0 ? 0.f : kt[o + q % hd]; });
  Buf zg = map(tp, N, [&](int64_t q) {
    int64_t o = xo[q / hd];
    return o < 0 ? -std::numeric_limits<float>::infinity() : zt[o + q % hd];
  });
  Buf ag = map(tp, N, [&](int64_t q) { int64_t o = ao[q / hd]; return o < 0 ? 0.f : ape[o + q % hd]; });
  const float* zp = zg.get();
  const float* ap = ag.get();
  g.sc = map(tp, N, [&](int64_t q) { return zp[q] + ap[q]; });
  const float* sp = g.sc.get();
  Buf mx = map(tp, n * hd, [&](int64_t q) {
    int64_t i = q / hd, e = q % hd;
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t r = 0; r < R; ++r) m = std::max(m, sp[(i * R + r) * hd + e]);
    return m;
  });
  const float* mp = mx.get();
  Buf z = map(tp, N, [&](int64_t q) { return sp[q] - mp[(q / (R * hd)) * hd + q % hd]; });
  const float* zz = z.get();
  Buf e = map(tp, N, [&](int64_t q) { return std::exp(zz[q]); });
  const float* ep = e.get();
  Buf den = map(tp, n * hd, [&](int64_t q) {
    int64_t i = q / hd, c = q % hd;
    float sum = 0.f;
    for (int64_t r = 0; r < R; ++r) sum += ep[(i * R + r) * hd + c];
    return sum;
  });
  const float* dp = den.get();
  g.S = map(tp, N, [&](int64_t q) { return ep[q] / dp[(q / (R * hd)) * hd + q % hd]; });
  const float* Sp = g.S.get();
  const float* kp = g.kg.get();
  Buf w = map(tp, N, [&](int64_t q) { return Sp[q] * kp[q]; });
  const float* wp = w.get();
  g.k = map(tp, n * hd, [&](int64_t q) {
    int64_t i = q / hd, c = q % hd;
    float sum = 0.f;
    for (int64_t r = 0; r < R; ++r) sum += wp[(i * R + r) * hd + c];
    return sum;
  });
  return g;
}

}  // namespace

void kv_compress_forward_ref(const float* kt, const float* zt, const float* ape, float* k,
                             int64_t s, int64_t hd, int ratio, core::ThreadPool* pool) {
  core::ThreadPool& tp = core::pool_or_default(pool);
  Gathered g = eager_forward(tp, kt, zt, ape, s, hd, ratio);
  for (int64_t q = 0; q < g.n * hd; ++q) k[q] = g.k[size_t(q)];
}

void kv_compress_backward_ref(const float* kt, const float* zt, const float* ape, const float* dk,
                              float* dkt, float* dzt, float* dape, int64_t s, int64_t hd,
                              int ratio, core::ThreadPool* pool) {
  core::ThreadPool& tp = core::pool_or_default(pool);
  Gathered g = eager_forward(tp, kt, zt, ape, s, hd, ratio);
  int64_t n = g.n, R = g.R, N = n * R * hd, C = compressor_width(ratio, hd);
  const float* Sp = g.S.get();
  const float* kg = g.kg.get();
  const float* kp = g.k.get();
  Buf gr = map(tp, N, [&](int64_t q) { return Sp[q] * dk[(q / (R * hd)) * hd + q % hd]; });
  const float* gp = gr.get();
  Buf diff = map(tp, N, [&](int64_t q) { return kg[q] - kp[(q / (R * hd)) * hd + q % hd]; });
  const float* df = diff.get();
  Buf dz = map(tp, N, [&](int64_t q) { return gp[q] * df[q]; });
  const float* dzp = dz.get();
  // Scatters (zero-filled first, as index_put into fresh zeros) and the sum over entries.
  for (int64_t q = 0; q < s * C; ++q) dkt[q] = dzt[q] = 0.f;
  for (int64_t q = 0; q < int64_t(ratio) * C; ++q) dape[q] = 0.f;
  for (int64_t q = 0; q < N; ++q) {
    int64_t o = g.xoff[size_t(q / hd)];
    if (o < 0) continue;
    dkt[o + q % hd] = gp[q];
    dzt[o + q % hd] = dzp[q];
    dape[g.aoff[size_t(q / hd)] + q % hd] += dzp[q];
  }
}

}  // namespace trex::kernels
