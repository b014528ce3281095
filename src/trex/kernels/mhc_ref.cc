// Reference mHC: the eager chains. X is cast to fp32 first (early promotion), then each op
// writes a fresh whole-tensor temporary ([tokens, ...]); the backward replays the forward's
// saved intermediates in reverse, as autograd does.
//   pre forward:  xf = float(X); p = xf @ phi^T; sq = xf*xf; ms = mean(sq); r = rsqrt(ms + eps);
//                 m = p * r; a = m[:, :n]*s0; a = a + b; sa = sigmoid(a); pre = sa + eps;
//                 c = m[:, n:2n]*s1; c = c + b; sc = sigmoid(c); post = 2*sc;
//                 z = m[:, 2n:]*s2; z = z + b; P = softmax(z) (max, sub, exp, sum, div);
//                 M = P + eps; 2T-1 times: sum over columns or rows, + eps, divide;
//                 xw = xf * pre[..., None]; y = sum(xw, streams); y = T(y)
//   pre backward: dyf = float(dy); dpre = sum(xf * dyf[:, None], d); dxp = pre[..., None] * dyf;
//                 da = dpre * sa * (1 - sa); dc = dpost * 2 * sc * (1 - sc); g = dC; the 2T-1
//                 steps reversed (g*out, sum, g - dot, / den); dz = P * (g - sum(g*P));
//                 dm = cat(da s0, dc s1, dz s2); ds_k = sum(d* m); db = sum over tokens;
//                 dp = dm * r; dr = sum(dm * p); dphi = dp^T @ xf; dxa = dp @ phi;
//                 coef = -dr r^3 / nd; dxb = coef * xf; dX = T(float(dX) + dxp + dxa + dxb)
//   head forward: xf = float(X); p = xf @ phi_h^T; ... r, m as above; a = m*s; a = a + b;
//                 sg = sigmoid(a); w = sg + eps; xw = xf * w[..., None]; y = T(sum(xw, streams))
//   head backward: dw = sum(xf * dyf, d); da = dw * sg * (1 - sg); dm = da*s; dscale = sum(da*m);
//                 db = sum over tokens of da; then dp, dr, dphi, dxa, coef, dxb as for pre
//   post forward: Ff, Xf; pf = post[..., None] * Ff[:, None]; mix = C^T Xf; out = T(pf + mix)
//   post backward: Gf; gp = Gf * post[..., None]; dF = sum(gp, streams); dX = C Gf;
//                 gf = Gf * Ff[:, None]; dpost = sum(gf, d); dC = Xf Gf^T
#include <cmath>
#include <limits>
#include <vector>

#include "trex/kernels/eager_chain.h"
#include "trex/kernels/gemm.h"
#include "trex/kernels/mhc.h"

namespace trex::kernels {
namespace {

using eager::Buf;
using eager::map;

// Sum over the middle axis of a [a, b, c] tensor -> [a, c] (b = 1..: reduces streams or rows).
Buf sum_mid(core::ThreadPool& tp, const float* x, int64_t a, int64_t b, int64_t c) {
  return map(tp, a * c, [=](int64_t q) {
    int64_t i = q / c, k = q % c;
    float s = 0.f;
    for (int64_t j = 0; j < b; ++j) s += x[(i * b + j) * c + k];
    return s;
  });
}
// Sum over the last axis of [a, b] -> [a].
Buf sum_last(core::ThreadPool& tp, const float* x, int64_t a, int64_t b) {
  return map(tp, a, [=](int64_t i) {
    float s = 0.f;
    for (int64_t j = 0; j < b; ++j) s += x[i * b + j];
    return s;
  });
}

float sigmoid(float z) { return 1.f / (1.f + std::exp(-z)); }

struct PreTape {
  Buf xf_own;
  const float* xf = nullptr;
  Buf p, r, m, sa, sc, pre, post, P;
  std::vector<Buf> M, den;  // M[0] = P + eps, M[s+1] = M[s] / den[s]
};

template <class T>
PreTape pre_forward_tape(core::ThreadPool& tp, const T* X, const float* phi, const float* b,
                         const float* scale, const MhcShape& sh) {
  PreTape tape;
  const int64_t tok = sh.tokens, n = sh.n, R = sh.rows(), nd = n * sh.d, nn = n * n;
  tape.xf = eager::as_f32(tp, X, tok * nd, tape.xf_own);
  const float* xf = tape.xf;
  tape.p = eager::fresh(tok * R);
  GemmOptions go;
  go.pool = &tp;
  sgemm(Trans::kNo, Trans::kYes, tok, R, nd, 1.f, xf, nd, phi, nd, 0.f, tape.p.get(), R, go);
  Buf sq = map(tp, tok * nd, [&](int64_t i) { return xf[i] * xf[i]; });
  Buf ss = sum_last(tp, sq.get(), tok, nd);
  const float* ssp = ss.get();
  Buf ms = map(tp, tok, [&](int64_t t) { return ssp[t] / float(nd); });
  const float* msp = ms.get();
  Buf mse = map(tp, tok, [&](int64_t t) { return msp[t] + sh.rms_eps; });
  const float* msep = mse.get();
  tape.r = map(tp, tok, [&](int64_t t) { return 1.f / std::sqrt(msep[t]); });
  const float* rp = tape.r.get();
  const float* pp = tape.p.get();
  tape.m = map(tp, tok * R, [&](int64_t i) { return pp[i] * rp[i / R]; });
  const float* mp = tape.m.get();
  // Gates: slice*scale, + bias, sigmoid, then + eps or * 2.
  Buf a1 = map(tp, tok * n, [&](int64_t i) { return mp[(i / n) * R + i % n] * scale[0]; });
  const float* a1p = a1.get();
  Buf a2 = map(tp, tok * n, [&](int64_t i) { return a1p[i] + b[i % n]; });
  const float* a2p = a2.get();
  tape.sa = map(tp, tok * n, [&](int64_t i) { return sigmoid(a2p[i]); });
  const float* sap = tape.sa.get();
  tape.pre = map(tp, tok * n, [&](int64_t i) { return sap[i] + sh.eps; });
  Buf c1 = map(tp, tok * n, [&](int64_t i) { return mp[(i / n) * R + n + i % n] * scale[1]; });
  const float* c1p = c1.get();
  Buf c2 = map(tp, tok * n, [&](int64_t i) { return c1p[i] + b[n + i % n]; });
  const float* c2p = c2.get();
  tape.sc = map(tp, tok * n, [&](int64_t i) { return sigmoid(c2p[i]); });
  const float* scp = tape.sc.get();
  tape.post = map(tp, tok * n, [&](int64_t i) { return 2.f * scp[i]; });
  Buf z1 = map(tp, tok * nn, [&](int64_t i) { return mp[(i / nn) * R + 2 * n + i % nn] * scale[2]; });
  const float* z1p = z1.get();
  Buf z = map(tp, tok * nn, [&](int64_t i) { return z1p[i] + b[2 * n + i % nn]; });
  const float* zp = z.get();
  Buf mx = map(tp, tok * n, [&](int64_t row) {
    float v = -std::numeric_limits<float>::infinity();
    for (int64_t k = 0; k < n; ++k) v = std::max(v, zp[row * n + k]);
    return v;
  });
  const float* mxp = mx.get();
  Buf zs = map(tp, tok * nn, [&](int64_t i) { return zp[i] - mxp[i / n]; });
  const float* zsp = zs.get();
  Buf ez = map(tp, tok * nn, [&](int64_t i) { return std::exp(zsp[i]); });
  Buf se = sum_last(tp, ez.get(), tok * n, n);
  const float* ezp = ez.get();
  const float* sep = se.get();
  tape.P = map(tp, tok * nn, [&](int64_t i) { return ezp[i] / sep[i / n]; });
  const float* Pp = tape.P.get();
  tape.M.push_back(map(tp, tok * nn, [&](int64_t i) { return Pp[i] + sh.eps; }));
  for (int s = 0; s < 2 * sh.iters - 1; ++s) {
    const float* in = tape.M.back().get();
    bool col = s % 2 == 0;
    // Column step: sum over rows j (the middle axis of [tok, n, n]); row step: over the last.
    Buf sum = col ? sum_mid(tp, in, tok, n, n) : sum_last(tp, in, tok * n, n);
    const float* sp = sum.get();
    tape.den.push_back(map(tp, tok * n, [&](int64_t i) { return sp[i] + sh.eps; }));
    const float* dp = tape.den.back().get();
    tape.M.push_back(map(tp, tok * nn, [&](int64_t i) {
      int64_t t = i / nn, j = (i % nn) / n, k = i % n;
      return in[i] / dp[t * n + (col ? k : j)];
    }));
  }
  return tape;
}

}  // namespace

template <class T>
void mhc_pre_forward_ref(const T* X, const float* phi, const float* b, const float* scale, T* y,
                         float* pre, float* post, float* C, const MhcShape& sh,
                         core::ThreadPool* pool) {
  if (sh.tokens <= 0 || sh.d <= 0) return;
  core::ThreadPool& tp = core::pool_or_default(pool);
  PreTape tape = pre_forward_tape(tp, X, phi, b, scale, sh);
  const int64_t tok = sh.tokens, n = sh.n, d = sh.d, nn = n * n;
  const float* xf = tape.xf;
  const float* prp = tape.pre.get();
  Buf xw = map(tp, tok * n * d, [&](int64_t i) { return xf[i] * prp[i / d]; });
  Buf yf = sum_mid(tp, xw.get(), tok, n, d);
  eager::store_as(tp, yf.get(), y, tok * d);
  std::copy(tape.pre.get(), tape.pre.get() + tok * n, pre);
  std::copy(tape.post.get(), tape.post.get() + tok * n, post);
  std::copy(tape.M.back().get(), tape.M.back().get() + tok * nn, C);
}

template <class T>
void mhc_pre_backward_ref(const T* X, const float* phi, const float* b, const float* scale,
                          const T* dy, const float* dpost, const float* dC, T* dX, float* dphi,
                          float* db, float* dscale, const MhcShape& sh, core::ThreadPool* pool) {
  const int64_t tok = sh.tokens, n = sh.n, d = sh.d, R = sh.rows(), nd = n * d, nn = n * n;
  std::fill(db, db + R, 0.f);
  std::fill(dscale, dscale + 3, 0.f);
  std::fill(dphi, dphi + R * nd, 0.f);
  if (tok <= 0 || d <= 0) return;
  core::ThreadPool& tp = core::pool_or_default(pool);
  PreTape tape = pre_forward_tape(tp, X, phi, b, scale, sh);
  const float* xf = tape.xf;
  Buf own_dy;
  const float* dyf = eager::as_f32(tp, dy, tok * d, own_dy);
  Buf xd = map(tp, tok * nd, [&](int64_t i) { return xf[i] * dyf[(i / nd) * d + i % d]; });
  Buf dpre = sum_last(tp, xd.get(), tok * n, d);
  const float* prp = tape.pre.get();
  Buf dxp = map(tp, tok * nd, [&](int64_t i) { return prp[i / d] * dyf[(i / nd) * d + i % d]; });
  const float* sap = tape.sa.get();
  const float* scp = tape.sc.get();
  const float* dprp = dpre.get();
  Buf oma = map(tp, tok * n, [&](int64_t i) { return 1.f - sap[i]; });
  const float* omap = oma.get();
  Buf sda = map(tp, tok * n, [&](int64_t i) { return sap[i] * omap[i]; });
  const float* sdap = sda.get();
  Buf da = map(tp, tok * n, [&](int64_t i) { return dprp[i] * sdap[i]; });
  Buf omc = map(tp, tok * n, [&](int64_t i) { return 1.f - scp[i]; });
  const float* omcp = omc.get();
  Buf sdc = map(tp, tok * n, [&](int64_t i) { return 2.f * scp[i] * omcp[i]; });
  const float* sdcp = sdc.get();
  Buf dc = map(tp, tok * n, [&](int64_t i) { return dpost[i] * sdcp[i]; });
  Buf g = map(tp, tok * nn, [&](int64_t i) { return dC[i]; });
  for (int s = 2 * sh.iters - 2; s >= 0; --s) {
    bool col = s % 2 == 0;
    const float* out = tape.M[size_t(s + 1)].get();
    const float* den = tape.den[size_t(s)].get();
    const float* gp = g.get();
    Buf go = map(tp, tok * nn, [&](int64_t i) { return gp[i] * out[i]; });
    Buf dot = col ? sum_mid(tp, go.get(), tok, n, n) : sum_last(tp, go.get(), tok * n, n);
    const float* dtp = dot.get();
    Buf diff = map(tp, tok * nn, [&](int64_t i) {
      int64_t t = i / nn, j = (i % nn) / n, k = i % n;
      return gp[i] - dtp[t * n + (col ? k : j)];
    });
    const float* dfp = diff.get();
    g = map(tp, tok * nn, [&](int64_t i) {
      int64_t t = i / nn, j = (i % nn) / n, k = i % n;
      return dfp[i] / den[t * n + (col ? k : j)];
    });
  }
  const float* Pp = tape.P.get();
  const float* gp = g.get();
  Buf gP = map(tp, tok * nn, [&](int64_t i) { return gp[i] * Pp[i]; });
  Buf gPs = sum_last(tp, gP.get(), tok * n, n);
  const float* gpsp = gPs.get();
  Buf gd = map(tp, tok * nn, [&](int64_t i) { return gp[i] - gpsp[i / n]; });
  const float* gdp = gd.get();
  Buf dz = map(tp, tok * nn, [&](int64_t i) { return Pp[i] * gdp[i]; });
  const float* dap = da.get();
  const float* dcp = dc.get();
  const float* dzp = dz.get();
  // dm = cat(da s0, dc s1, dz s2) and the undivided cat for db.
  Buf dcat = map(tp, tok * R, [&](int64_t i) {
    int64_t t = i / R, q = i % R;
    return q < n ? dap[t * n + q] : q < 2 * n ? dcp[t * n + q - n] : dzp[t * nn + q - 2 * n];
  });
  const float* dcatp = dcat.get();
  Buf dm = map(tp, tok * R, [&](int64_t i) {
    int64_t q = i % R;
    return dcatp[i] * scale[q < n ? 0 : q < 2 * n ? 1 : 2];
  });
  const float* mp = tape.m.get();
  Buf dsm = map(tp, tok * R, [&](int64_t i) { return dcatp[i] * mp[i]; });
  for (int64_t t = 0; t < tok; ++t)
    for (int64_t q = 0; q < R; ++q) {
      db[q] += dcatp[t * R + q];
      dscale[q < n ? 0 : q < 2 * n ? 1 : 2] += dsm[size_t(t * R + q)];
    }
  const float* rp = tape.r.get();
  const float* dmp = dm.get();
  Buf dp = map(tp, tok * R, [&](int64_t i) { return dmp[i] * rp[i / R]; });
  const float* pp = tape.p.get();
  Buf dmpp = map(tp, tok * R, [&](int64_t i) { return dmp[i] * pp[i]; });
  Buf dr = sum_last(tp, dmpp.get(), tok, R);
  GemmOptions gopt;
  gopt.pool = &tp;
  sgemm(Trans::kYes, Trans::kNo, R, nd, tok, 1.f, dp.get(), R, xf, nd, 0.f, dphi, nd, gopt);
  Buf dxa = eager::fresh(tok * nd);
  sgemm(Trans::kNo, Trans::kNo, tok, nd, R, 1.f, dp.get(), R, phi, nd, 0.f, dxa.get(), nd, gopt);
  const float* drp = dr.get();
  Buf coef = map(tp, tok, [&](int64_t t) { return -drp[t] * rp[t] * rp[t] * rp[t] / float(nd); });
  const float* cp = coef.get();
  Buf dxb = map(tp, tok * nd, [&](int64_t i) { return cp[i / nd] * xf[i]; });
  Buf own_dx;
  const float* dxin = eager::as_f32(tp, static_cast<const T*>(dX), tok * nd, own_dx);
  const float* dxpp = dxp.get();
  const float* dxap = dxa.get();
  const float* dxbp = dxb.get();
  Buf sum1 = map(tp, tok * nd, [&](int64_t i) { return dxpp[i] + dxap[i]; });
  const float* s1 = sum1.get();
  Buf sum2 = map(tp, tok * nd, [&](int64_t i) { return s1[i] + dxbp[i]; });
  const float* s2 = sum2.get();
  Buf tot = map(tp, tok * nd, [&](int64_t i) { return dxin[i] + s2[i]; });
  eager::store_as(tp, tot.get(), dX, tok * nd);
}

template <class T>
void mhc_post_forward_ref(const T* F, const T* X, const float* post, const float* C, T* out,
                          const MhcShape& sh, core::ThreadPool* pool) {
  const int64_t tok = sh.tokens, n = sh.n, d = sh.d, nd = n * d, nn = n * n;
  if (tok <= 0 || d <= 0) return;
  core::ThreadPool& tp = core::pool_or_default(pool);
  Buf of, ox;
  const float* Ff = eager::as_f32(tp, F, tok * d, of);
  const float* Xf = eager::as_f32(tp, X, tok * nd, ox);
  Buf pf = map(tp, tok * nd, [&](int64_t i) { return post[i / d] * Ff[(i / nd) * d + i % d]; });
  Buf mix = map(tp, tok * nd, [&](int64_t i) {
    int64_t t = i / nd, k = (i % nd) / d, e = i % d;
    float s = 0.f;
    for (int64_t j = 0; j < n; ++j) s += C[t * nn + j * n + k] * Xf[t * nd + j * d + e];
    return s;
  });
  const float* pfp = pf.get();
  const float* mxp = mix.get();
  Buf o = map(tp, tok * nd, [&](int64_t i) { return pfp[i] + mxp[i]; });
  eager::store_as(tp, o.get(), out, tok * nd);
}

template <class T>
void mhc_post_backward_ref(const T* G, const T* F, const T* X, const float* post, const float* C,
                           T* dF, T* dX, float* dpost, float* dC, const MhcShape& sh,
                           core::ThreadPool* pool) {
  const int64_t tok = sh.tokens, n = sh.n, d = sh.d, nd = n * d, nn = n * n;
  if (tok <= 0) return;
  core::ThreadPool& tp = core::pool_or_default(pool);
  Buf og, of, ox;
  const float* Gf = eager::as_f32(tp, G, tok * nd, og);
  const float* Ff = eager::as_f32(tp, F, tok * d, of);
  const float* Xf = eager::as_f32(tp, X, tok * nd, ox);
  Buf gp = map(tp, tok * nd, [&](int64_t i) { return Gf[i] * post[i / d]; });
  Buf df = sum_mid(tp, gp.get(), tok, n, d);
  eager::store_as(tp, df.get(), dF, tok * d);
  Buf dx = map(tp, tok * nd, [&](int64_t i) {
    int64_t t = i / nd, j = (i % nd) / d, e = i % d;
    float s = 0.f;
    for (int64_t k = 0; k < n; ++k) s += C[t * nn + j * n + k] * Gf[t * nd + k * d + e];
    return s;
  });
  eager::store_as(tp, dx.get(), dX, tok * nd);
  Buf gf = map(tp, tok * nd, [&](int64_t i) { return Gf[i] * Ff[(i / nd) * d + i % d]; });
  Buf dpo = sum_last(tp, gf.get(), tok * n, d);
  std::copy(dpo.get(), dpo.get() + tok * n, dpost);
  Buf dc = map(tp, tok * nn, [&](int64_t i) {
    int64_t t = i / nn, j = (i % nn) / n, k = i % n;
    float s = 0.f;
    for (int64_t e = 0; e < d; ++e) s += Xf[t * nd + j * d + e] * Gf[t * nd + k * d + e];
    return s;
  });
  std::copy(dc.get(), dc.get() + tok * nn, dC);
}


namespace {

struct HeadTape {
  Buf xf_own;
  const float* xf = nullptr;
  Buf p, r, m, sg, w;
};

template <class T>
HeadTape head_forward_tape(core::ThreadPool& tp, const T* X, const float* phi, const float* b,
                           float scale, const MhcShape& sh) {
  HeadTape tape;
  const int64_t tok = sh.tokens, n = sh.n, nd = n * sh.d;
  tape.xf = eager::as_f32(tp, X, tok * nd, tape.xf_own);
  const float* xf = tape.xf;
  tape.p = eager::fresh(tok * n);
  GemmOptions go;
  go.pool = &tp;
  sgemm(Trans::kNo, Trans::kYes, tok, n, nd, 1.f, xf, nd, phi, nd, 0.f, tape.p.get(), n, go);
  Buf sq = map(tp, tok * nd, [&](int64_t i) { return xf[i] * xf[i]; });
  Buf ss = sum_last(tp, sq.get(), tok, nd);
  const float* ssp = ss.get();
  Buf ms = map(tp, tok, [&](int64_t t) { return ssp[t] / float(nd); });
  const float* msp = ms.get();
  Buf mse = map(tp, tok, [&](int64_t t) { return msp[t] + sh.rms_eps; });
  const float* msep = mse.get();
  tape.r = map(tp, tok, [&](int64_t t) { return 1.f / std::sqrt(msep[t]); });
  const float* rp = tape.r.get();
  const float* pp = tape.p.get();
  tape.m = map(tp, tok * n, [&](int64_t i) { return pp[i] * rp[i / n]; });
  const float* mp = tape.m.get();
  Buf a1 = map(tp, tok * n, [&](int64_t i) { return mp[i] * scale; });
  const float* a1p = a1.get();
  Buf a = map(tp, tok * n, [&](int64_t i) { return a1p[i] + b[i % n]; });
  const float* ap = a.get();
  tape.sg = map(tp, tok * n, [&](int64_t i) { return sigmoid(ap[i]); });
  const float* sgp = tape.sg.get();
  tape.w = map(tp, tok * n, [&](int64_t i) { return sgp[i] + sh.eps; });
  return tape;
}

}  // namespace

template <class T>
void mhc_head_forward_ref(const T* X, const float* phi, const float* b, float scale, T* y,
                          float* w, const MhcShape& sh, core::ThreadPool* pool) {
  if (sh.tokens <= 0 || sh.d <= 0) return;
  core::ThreadPool& tp = core::pool_or_default(pool);
  HeadTape tape = head_forward_tape(tp, X, phi, b, scale, sh);
  const int64_t tok = sh.tokens, n = sh.n, d = sh.d;
  const float* xf = tape.xf;
  const float* wp = tape.w.get();
  Buf xw = map(tp, tok * n * d, [&](int64_t i) { return xf[i] * wp[i / d]; });
  Buf yf = sum_mid(tp, xw.get(), tok, n, d);
  eager::store_as(tp, yf.get(), y, tok * d);
  std::copy(wp, wp + tok * n, w);
}

template <class T>
void mhc_head_backward_ref(const T* X, const float* phi, const float* b, float scale, const T* dy,
                           T* dX, float* dphi, float* db, float* dscale, const MhcShape& sh,
                           core::ThreadPool* pool) {
  const int64_t tok = sh.tokens, n = sh.n, d = sh.d, nd = n * d;
  std::fill(db, db + n, 0.f);
  dscale[0] = 0.f;
  std::fill(dphi, dphi + n * nd, 0.f);
  if (tok <= 0 || d <= 0) return;
  core::ThreadPool& tp = core::pool_or_default(pool);
  HeadTape tape = head_forward_tape(tp, X, phi, b, scale, sh);
  const float* xf = tape.xf;
  Buf own_dy;
  const float* dyf = eager::as_f32(tp, dy, tok * d, own_dy);
  Buf xd = map(tp, tok * nd, [&](int64_t i) { return xf[i] * dyf[(i / nd) * d + i % d]; });
  Buf dw = sum_last(tp, xd.get(), tok * n, d);
  const float* sgp = tape.sg.get();
  Buf om = map(tp, tok * n, [&](int64_t i) { return 1.f - sgp[i]; });
  const float* omp = om.get();
  Buf sd = map(tp, tok * n, [&](int64_t i) { return sgp[i] * omp[i]; });
  const float* sdp = sd.get();
  const float* dwp = dw.get();
  Buf da = map(tp, tok * n, [&](int64_t i) { return dwp[i] * sdp[i]; });
  const float* dap = da.get();
  Buf dm = map(tp, tok * n, [&](int64_t i) { return dap[i] * scale; });
  const float* mp = tape.m.get();
  Buf dsm = map(tp, tok * n, [&](int64_t i) { return dap[i] * mp[i]; });
  for (int64_t i = 0; i < tok * n; ++i) {
    db[i % n] += dap[i];
    dscale[0] += dsm[size_t(i)];
  }
  const float* rp = tape.r.get();
  const float* dmp = dm.get();
  Buf dp = map(tp, tok * n, [&](int64_t i) { return dmp[i] * rp[i / n]; });
  const float* pp = tape.p.get();
  Buf dmpp = map(tp, tok * n, [&](int64_t i) { return dmp[i] * pp[i]; });
  Buf dr = sum_last(tp, dmpp.get(), tok, n);
  GemmOptions gopt;
  gopt.pool = &tp;
  sgemm(Trans::kYes, Trans::kNo, n, nd, tok, 1.f, dp.get(), n, xf, nd, 0.f, dphi, nd, gopt);
  Buf dxa = eager::fresh(tok * nd);
  sgemm(Trans::kNo, Trans::kNo, tok, nd, n, 1.f, dp.get(), n, phi, nd, 0.f, dxa.get(), nd, gopt);
  const float* drp = dr.get();
  Buf coef = map(tp, tok, [&](int64_t t) { return -drp[t] * rp[t] * rp[t] * rp[t] / float(nd); });
  const float* cp = coef.get();
  Buf dxb = map(tp, tok * nd, [&](int64_t i) { return cp[i / nd] * xf[i]; });
  const float* wp = tape.w.get();
  Buf dxp = map(tp, tok * nd, [&](int64_t i) { return wp[i / d] * dyf[(i / nd) * d + i % d]; });
  Buf own_dx;
  const float* dxin = eager::as_f32(tp, static_cast<const T*>(dX), tok * nd, own_dx);
  const float* dxpp = dxp.get();
  const float* dxap = dxa.get();
  const float* dxbp = dxb.get();
  Buf s1 = map(tp, tok * nd, [&](int64_t i) { return dxpp[i] + dxap[i]; });
  const float* s1p = s1.get();
  Buf s2 = map(tp, tok * nd, [&](int64_t i) { return s1p[i] + dxbp[i]; });
  const float* s2p = s2.get();
  Buf tot = map(tp, tok * nd, [&](int64_t i) { return dxin[i] + s2p[i]; });
  eager::store_as(tp, tot.get(), dX, tok * nd);
}

#define TREX_MHC_REF(T)                                                                          \
  template void mhc_pre_forward_ref<T>(const T*, const float*, const float*, const float*, T*,   \
                                       float*, float*, float*, const MhcShape&,                  \
                                       core::ThreadPool*);                                       \
  template void mhc_pre_backward_ref<T>(const T*, const float*, const float*, const float*,      \
                                        const T*, const float*, const float*, T*, float*,        \
                                        float*, float*, const MhcShape&, core::ThreadPool*);     \
  template void mhc_post_forward_ref<T>(const T*, const T*, const float*, const float*, T*,      \
                                        const MhcShape&, core::ThreadPool*);                     \
  template void mhc_post_backward_ref<T>(const T*, const T*, const T*, const float*,             \
                                         const float*, T*, T*, float*, float*, const MhcShape&,  \
                                         core::ThreadPool*);                                     \
  template void mhc_head_forward_ref<T>(const T*, const float*, const float*, float, T*, float*,  \
                                        const MhcShape&, core::ThreadPool*);                     \
  template void mhc_head_backward_ref<T>(const T*, const float*, const float*, float, const T*,  \
                                         T*, float*, float*, float*, const MhcShape&,            \
                                         core::ThreadPool*);
TREX_MHC_REF(float)
TREX_MHC_REF(core::bf16)
#undef TREX_MHC_REF

}  // namespace trex::kernels
