// Reference AdamW: the pass-by-pass chain of an unfused framework (PyTorch's single-tensor AdamW
// with every op run on its own), one rounded op per pass over the whole tensor; in-place ops
// update the state, the rest write fresh temporaries (uninitialised, like torch.empty):
//   theta *= decay;  m *= b1;  t1 = g * c1;  m += t1;  v *= b2;  t2 = g * g;  t3 = t2 * c2;
//   v += t3;  s = sqrt(v);  d = s / bias2_sqrt;  d = d + eps;  q = m / d;  u = q * step;
//   theta -= u;  w = bf16(theta)
// 15 passes reading and writing about 31 arrays' worth of memory where the fused kernel moves 7.5.
#include <cmath>

#include "trex/kernels/adamw.h"
#include "trex/kernels/eager_chain.h"

namespace trex::kernels {
namespace {

// a[i] = f(i) in place: one eager in-place op.
template <class F>
void apply(core::ThreadPool& tp, float* a, int64_t n, F f) {
  tp.parallel_for(0, n, 1 << 15, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) a[i] = f(i);
  });
}

}  // namespace

void adamw_update_ref(const AdamWScalars& s, float* theta, float* m, float* v, const float* g,
                      core::bf16* w, int64_t n, core::ThreadPool* pool) {
  if (n <= 0) return;
  using eager::Buf;
  using eager::map;
  core::ThreadPool& tp = core::pool_or_default(pool);
  apply(tp, theta, n, [&](int64_t i) { return theta[i] * s.decay; });
  apply(tp, m, n, [&](int64_t i) { return m[i] * s.beta1; });
  Buf t1 = map(tp, n, [&](int64_t i) { return g[i] * s.one_minus_beta1; });
  apply(tp, m, n, [&, p = t1.get()](int64_t i) { return m[i] + p[i]; });
  apply(tp, v, n, [&](int64_t i) { return v[i] * s.beta2; });
  Buf t2 = map(tp, n, [&](int64_t i) { return g[i] * g[i]; });
  Buf t3 = map(tp, n, [&, p = t2.get()](int64_t i) { return p[i] * s.one_minus_beta2; });
  apply(tp, v, n, [&, p = t3.get()](int64_t i) { return v[i] + p[i]; });
  Buf sq = map(tp, n, [&](int64_t i) { return std::sqrt(v[i]); });
  Buf d = map(tp, n, [&, p = sq.get()](int64_t i) { return p[i] / s.bias2_sqrt; });
  Buf de = map(tp, n, [&, p = d.get()](int64_t i) { return p[i] + s.eps; });
  Buf q = map(tp, n, [&, p = de.get()](int64_t i) { return m[i] / p[i]; });
  Buf u = map(tp, n, [&, p = q.get()](int64_t i) { return p[i] * s.step_size; });
  apply(tp, theta, n, [&, p = u.get()](int64_t i) { return theta[i] - p[i]; });
  if (w) eager::store_as(tp, theta, w, n);
}

}  // namespace trex::kernels
