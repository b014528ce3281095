// Reference RoPE: the eager chain, one fresh temporary per op; each op parallel over elements so
// that the comparison with the fused kernel measures fusion, not threading.
// (x [tokens, heads, head_dim], n = tokens heads, h = rope_dim / 2, o = head_dim - rope_dim)
//   xf = float(x); xr = xf[..., o:] (copy); x0 = xr[..., 0::2]; x1 = xr[..., 1::2]   [n, h]
//   c = cos[pos] expanded over heads; s = sign * sin[pos] expanded                 [n, h]
//   y0 = x0 * c - x1 * s (t1 = x0*c, t2 = x1*s, y0 = t1 - t2);
//   y1 = x0 * s + x1 * c (t3 = x0*s, t4 = x1*c, y1 = t3 + t4);
//   yr = stack(y0, y1, -1).flatten(-2); y = cat(xf[..., :o], yr); out = T(y)
#include <cmath>
#include <memory>
#include <type_traits>

#include "trex/kernels/eager_chain.h"
#include "trex/kernels/elementwise_simd.h"
#include "trex/kernels/rope.h"

namespace trex::kernels {
using eager::as_f32;
using eager::Buf;
using eager::map;
using core::pool_or_default;

template <class T>
void rope_apply_ref(const T* x, T* y, const int64_t* pos, int64_t tokens, int64_t heads,
                    int64_t head_dim, const RopeTable& table, int sign, core::ThreadPool* pool) {
  if (tokens <= 0 || heads <= 0 || head_dim <= 0) return;
  core::ThreadPool& tp = pool_or_default(pool);
  int64_t rd = table.rope_dim, h = rd / 2, o = head_dim - rd, n = tokens * heads;
  int64_t total = n * head_dim;
  float sg = sign < 0 ? -1.f : 1.f;
  Buf xo;
  const float* xf = as_f32(tp, x, total, xo);
  Buf xr = map(tp, n * rd, [&](int64_t i) { return xf[(i / rd) * head_dim + o + i % rd]; });
  const float* xrp = xr.get();
  Buf x0 = map(tp, n * h, [&](int64_t i) { return xrp[(i / h) * rd + 2 * (i % h)]; });
  Buf x1 = map(tp, n * h, [&](int64_t i) { return xrp[(i / h) * rd + 2 * (i % h) + 1]; });
  // The table stores (c, c) and (-s, s) per pair: take the second of each for c and s.
  auto row = [&](int64_t i) { return pos[(i / h) / heads] * rd + 2 * (i % h) + 1; };
  Buf c = map(tp, n * h, [&](int64_t i) { return table.cos[size_t(row(i))]; });
  Buf s = map(tp, n * h, [&](int64_t i) { return sg * table.sin[size_t(row(i))]; });
  const float *a = x0.get(), *b = x1.get(), *cp = c.get(), *sp = s.get();
  Buf t1 = map(tp, n * h, [&](int64_t i) { return a[i] * cp[i]; });
  Buf t2 = map(tp, n * h, [&](int64_t i) { return b[i] * sp[i]; });
  const float *t1p = t1.get(), *t2p = t2.get();
  Buf y0 = map(tp, n * h, [&](int64_t i) { return t1p[i] - t2p[i]; });
  Buf t3 = map(tp, n * h, [&](int64_t i) { return a[i] * sp[i]; });
  Buf t4 = map(tp, n * h, [&](int64_t i) { return b[i] * cp[i]; });
  const float *t3p = t3.get(), *t4p = t4.get();
  Buf y1 = map(tp, n * h, [&](int64_t i) { return t3p[i] + t4p[i]; });
  const float *y0p = y0.get(), *y1p = y1.get();
  Buf yr = map(tp, n * rd, [&](int64_t i) {
    // Select the value, not the array: GCC 12 at -O1 with -fsanitize=undefined compiled
    // `(even ? y0p : y1p)[r * h + j / 2]` as if j / 2 were 0 for odd j (seen in the ASan+UBSan
    // build: every odd element took its row's first y1).
    const int64_t r = i / rd, j = i % rd, k = r * h + j / 2;
    return j % 2 == 0 ? y0p[k] : y1p[k];
  });
  const float* yrp = yr.get();
  Buf yf = map(tp, total, [&](int64_t i) {
    int64_t r = i / head_dim, j = i % head_dim;
    return j < o ? xf[i] : yrp[r * rd + j - o];
  });
  const float* yfp = yf.get();
  tp.parallel_for(0, total, 1 << 15, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) simd::st(y + i, yfp[i]);
  });
}

template void rope_apply_ref<float>(const float*, float*, const int64_t*, int64_t, int64_t,
                                    int64_t, const RopeTable&, int, core::ThreadPool*);
template void rope_apply_ref<core::bf16>(const core::bf16*, core::bf16*, const int64_t*, int64_t,
                                         int64_t, int64_t, const RopeTable&, int,
                                         core::ThreadPool*);

}  // namespace trex::kernels
