// Reference softmax cross-entropy: the eager chain, one fresh temporary per op (x [rows, V]):
//   xf = float(x); m = max(xf, -1); z = xf - m[:, None]; e = exp(z); s = sum(e, -1);
//   ls = log(s); lse = m + ls; xt = gather(xf, target); loss = lse - xt (0 where ignored);
//   p = e / s[:, None]; oh = one_hot(target); d = p - oh; g = d * grad_scale (0 where ignored);
//   dlogits = T(g)
#include <cmath>
#include <limits>

#include "trex/kernels/cross_entropy.h"
#include "trex/kernels/eager_chain.h"
#include "trex/kernels/elementwise_simd.h"

namespace trex::kernels {
namespace {

using eager::Buf;
using eager::fresh;
using eager::map;

// A row-wise reduction op: out[r] = fold over the row of a [rows, V] tensor.
template <class F>
Buf row_fold(core::ThreadPool& tp, const float* a, int64_t rows, int64_t vocab, float init,
             F f) {
  Buf out = fresh(rows);
  float* o = out.get();
  tp.parallel_for(0, rows, 4, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      float acc = init;
      for (int64_t v = 0; v < vocab; ++v) acc = f(acc, a[r * vocab + v]);
      o[r] = acc;
    }
  });
  return out;
}

}  // namespace

template <class T>
void cross_entropy_forward_backward_ref(const T* logits, const int32_t* targets, float* loss,
                                        T* dlogits, int64_t rows, int64_t vocab,
                                        float grad_scale, core::ThreadPool* pool) {
  if (rows <= 0) return;
  core::ThreadPool& tp = core::pool_or_default(pool);
  int64_t n = rows * vocab;
  // Always an upcast copy, so that an in-place gradient cannot change what later ops read.
  Buf xf = map(tp, n, [&](int64_t i) { return simd::ld(logits + i); });
  const float* x = xf.get();
  Buf m = row_fold(tp, x, rows, vocab, -std::numeric_limits<float>::infinity(),
                   [](float a, float b) { return a > b ? a : b; });
  const float* mp = m.get();
  Buf z = map(tp, n, [&](int64_t i) { return x[i] - mp[i / vocab]; });
  const float* zp = z.get();
  Buf e = map(tp, n, [&](int64_t i) { return std::exp(zp[i]); });
  const float* ep = e.get();
  Buf s = row_fold(tp, ep, rows, vocab, 0.f, [](float a, float b) { return a + b; });
  const float* sp = s.get();
  Buf ls = map(tp, rows, [&](int64_t r) { return std::log(sp[r]); });
  const float* lsp = ls.get();
  Buf lse = map(tp, rows, [&](int64_t r) { return mp[r] + lsp[r]; });
  const float* lsep = lse.get();
  Buf xt = map(tp, rows, [&](int64_t r) { return targets[r] < 0 ? 0.f : x[r * vocab + targets[r]]; });
  const float* xtp = xt.get();
  for (int64_t r = 0; r < rows; ++r) loss[r] = targets[r] < 0 ? 0.f : lsep[r] - xtp[r];
  if (!dlogits) return;
  Buf p = map(tp, n, [&](int64_t i) { return ep[i] / sp[i / vocab]; });
  const float* pp = p.get();
  Buf oh = map(tp, n, [&](int64_t i) { return targets[i / vocab] == i % vocab ? 1.f : 0.f; });
  const float* ohp = oh.get();
  Buf d = map(tp, n, [&](int64_t i) { return pp[i] - ohp[i]; });
  const float* dp = d.get();
  Buf g = map(tp, n, [&](int64_t i) { return targets[i / vocab] < 0 ? 0.f : dp[i] * grad_scale; });
  eager::store_as(tp, g.get(), dlogits, n);
}

template void cross_entropy_forward_backward_ref<float>(const float*, const int32_t*, float*,
                                                        float*, int64_t, int64_t, float,
                                                        core::ThreadPool*);
template void cross_entropy_forward_backward_ref<core::bf16>(const core::bf16*, const int32_t*,
                                                             float*, core::bf16*, int64_t, int64_t,
                                                             float, core::ThreadPool*);

}  // namespace trex::kernels
