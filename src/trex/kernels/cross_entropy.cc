// Fused softmax cross-entropy, per row: a max pass, a sum-of-exp pass and a gradient pass. The
// row (at most 505 KiB in fp32 for V = 129280) stays in L2 after the first pass, so memory sees
// one read and one write of the logits instead of the ~12 whole-tensor passes of the eager chain.
// (An online max-and-sum in one pass would cost a third exp per element, and exp, not memory, is
// what limits this kernel on one core.) The tuned vocab_tile variant does the two passes per
// L1-sized tile with an online rescale: one extra exp per tile, not per element.
// On AVX-512 (row_isa()) the exps run 16 lanes at a time and feed the same 8-lane sum in the same
// order (low half, then high half), so both paths give the same bits; a gradient that is far
// larger than the caches is written with streaming stores (no write-allocate read).
// The sum-of-exp pass requests the next row's lines (into L2): the max pass of a row otherwise
// waits on memory one line after the other (a third of the kernel's time in a profile), while
// the sum pass, reading L2 and bound by its exps, leaves the memory idle.
// fp32 rows with a gradient (the built-in whole-row passes) take one exp per element, not two:
// the sum pass keeps each exp(x - m) in a per-thread row buffer (it stays in L2), and the
// gradient pass multiplies it by scale / sum. The exps were what bounded the kernel. A product
// that would be subnormal is written as 0 instead (the exps that would make one are zeroed
// first, so no multiply makes one: a subnormal result costs a microcode assist on some cores);
// such a gradient is below 1.2e-38 in magnitude. So the fp32 gradient is no longer
// exp(x - lse) scale's bits but within an ulp or two of it; the tolerance against the eager
// reference (1e-4) is unchanged, and the AVX2 and AVX-512 paths still give the same bits.
// On AVX-512 those fp32 rows are pipelined per thread (ce_rows_fp32_512): a row's gradient is
// written during the next row's sum pass, and the lines requested are those of the row the same
// thread takes next; the same operations per element, so the same bits as the passes apart.
// Ignored rows are skipped when choosing the row to request: their logits are never read.
#include "trex/kernels/cross_entropy.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "trex/core/trace.h"
#include "trex/kernels/elementwise_simd.h"
#include "trex/kernels/elementwise_simd512.h"
#include "trex/kernels/row_blocking.h"
#include "trex/kernels/row_isa.h"

namespace trex::kernels {
namespace {

using simd::ld;
using simd::st;

// max of x[0, n) (n >= 1).
template <class T>
float span_max(const T* x, int64_t n) {
  int64_t i = 0;
  float m = -std::numeric_limits<float>::infinity();
#ifdef TREX_ELEM_AVX2
  if (n >= 8) {
    __m256 vm = simd::load8(x);
    for (i = 8; i + 8 <= n; i += 8) vm = _mm256_max_ps(vm, simd::load8(x + i));
    alignas(32) float lm[8];
    _mm256_store_ps(lm, vm);
    for (float v : lm) m = std::max(m, v);
  }
#endif
  for (; i < n; ++i) m = std::max(m, ld(x + i));
  return m;
}

// Requests the line of next[i] into L2 (next may be null: nothing to request).
template <class T>
inline void request_line(const T* next, int64_t i) {
#ifdef TREX_ELEM_AVX2
  if (next) _mm_prefetch(reinterpret_cast<const char*>(next + i), _MM_HINT_T1);
#else
  (void)next, (void)i;
#endif
}

// sum of exp(x - m) over x[0, n): 8 lanes, then the tail in order. Requests the lines of
// next[0, n) on the way (the next row: see the top).
// e (may be null): receives each exp(x - m).
template <class T>
float span_sum_exp(const T* x, int64_t n, float m, const T* next, float* e) {
  int64_t i = 0;
  float s = 0.f;
#ifdef TREX_ELEM_AVX2
  if (n >= 8) {
    __m256 vmax = _mm256_set1_ps(m), vs = _mm256_setzero_ps();
    for (; i + 8 <= n; i += 8) {
      if (i % 16 == 0) request_line(next, i);
      const __m256 ev = simd::exp8(_mm256_sub_ps(simd::load8(x + i), vmax));
      if (e) _mm256_storeu_ps(e + i, ev);
      vs = _mm256_add_ps(vs, ev);
    }
    s = simd::hsum(vs);
  }
#endif
  for (; i < n; ++i) {
    const float ev = std::exp(ld(x + i) - m);
    if (e) e[i] = ev;
    s += ev;
  }
  return s;
}

// The gradient row of an ignored row (target < 0): zeros. With NT (the row on a 32-byte boundary,
// use_streaming) by 32-byte streaming stores: plain stores first read each line they write, so
// these rows (a fifth of the suite's, the masked prompt tokens of SFT) cost a read and a write
// of the row instead of the write alone. Zero is 0 in either storage type.
template <class T>
void zero_row(T* dx, int64_t vocab, bool nt) {
  size_t b = 0;
  const size_t n = size_t(vocab) * sizeof(T);
#ifdef TREX_ELEM_AVX2
  if (nt)
    for (; b + 32 <= n; b += 32)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(reinterpret_cast<char*>(dx) + b),
                          _mm256_setzero_si256());
#else
  (void)nt;
#endif
  std::memset(reinterpret_cast<char*>(dx) + b, 0, n - b);
}

#ifdef TREX_ELEM_AVX2
// The maximum of a vector's 16 lanes (exact in any order).
TREX_AVX512_FN float hmax16(__m512 v) {
  alignas(32) float lm[8];
  _mm256_store_ps(lm, _mm256_max_ps(simd::low8(v), simd::high8(v)));
  float m = lm[0];
  for (float x : lm) m = std::max(m, x);
  return m;
}

// The spans above on 16 lanes (exp16 is exp8 lane for lane). The sum keeps span_sum_exp's
// 8-lane accumulator and order: each 16-lane step adds its low 8 exps, then its high 8.
TREX_AVX512_FN float span_max512(const float* x, int64_t n) {
  int64_t i = 0;
  float m = -std::numeric_limits<float>::infinity();
  if (n >= 16) {
    __m512 vm = _mm512_loadu_ps(x);
    for (i = 16; i + 16 <= n; i += 16) vm = simd::max16(vm, _mm512_loadu_ps(x + i));
    m = hmax16(vm);
  }
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}
TREX_AVX512_FN float span_max512(const core::bf16* x, int64_t n) {
  int64_t i = 0;
  float m = -std::numeric_limits<float>::infinity();
  if (n >= 16) {
    __m512 vm = simd::load16(x, simd::kAll16);
    for (i = 16; i + 16 <= n; i += 16) vm = simd::max16(vm, simd::load16(x + i, simd::kAll16));
    m = hmax16(vm);
  }
  for (; i < n; ++i) m = std::max(m, ld(x + i));
  return m;
}

template <class T>
TREX_AVX512_FN float span_sum_exp512(const T* x, int64_t n, float m, const T* next, float* ex) {
  int64_t i = 0;
  float s = 0.f;
  if (n >= 8) {
    const __m512 vmax16 = _mm512_set1_ps(m);
    __m256 vs = _mm256_setzero_ps();
    for (; i + 16 <= n; i += 16) {
      request_line(next, i);
      const __m512 e = simd::exp16(_mm512_sub_ps(simd::load16(x + i, simd::kAll16), vmax16));
      if (ex) _mm512_storeu_ps(ex + i, e);
      vs = _mm256_add_ps(vs, simd::low8(e));
      vs = _mm256_add_ps(vs, simd::high8(e));
    }
    if (i + 8 <= n) {
      const __m256 e = simd::exp8(_mm256_sub_ps(simd::load8(x + i), _mm256_set1_ps(m)));
      if (ex) _mm256_storeu_ps(ex + i, e);
      vs = _mm256_add_ps(vs, e);
      i += 8;
    }
    s = simd::hsum(vs);
  }
  for (; i < n; ++i) {
    const float e = std::exp(ld(x + i) - m);
    if (ex) ex[i] = e;
    s += e;
  }
  return s;
}

// exp16 for x <= 0 or NaN (x - max): exp16's upper clamp at 88 changes nothing there, so it is
// left out: the same bits in one instruction fewer.
TREX_AVX512_FN __m512 exp16_nonpos(__m512 x) {
  return simd::exp16_clamped(simd::max16(x, _mm512_set1_ps(-87.f)));
}

// span_sum_exp512 (fp32, exps kept in ex) with the gradient pass of the thread's previous row in
// the same loop: dxp = ep cp, 0 where ep < thrp (row_grad_from_exp512's products). The exps of
// this row and the gradient writes of the previous one then overlap, where the passes one after
// the other left the memory idle during the exps and the core idle during the writes. The zeroing
// is a masked multiply whose other lanes take 0 cp (what multiplying a zeroed exp gives); the
// exps drop exp16's upper clamp (x - m <= 0); a 64-byte aligned gradient is streamed 64 bytes
// per store. Same bits as the passes apart.
template <bool NT>
TREX_AVX512_FN float span_sum_exp_grad512(const float* x, int64_t n, float m, const float* next,
                                           float* ex, const float* ep, float* dxp, float cp,
                                           float thrp) {
  int64_t i = 0;
  float s = 0.f;
  const __m512 vc = _mm512_set1_ps(cp), vt = _mm512_set1_ps(thrp), vz = _mm512_set1_ps(0.f * cp);
  const bool a64 = reinterpret_cast<uintptr_t>(dxp) % 64 == 0;
  if (n >= 8) {
    const __m512 vmax16 = _mm512_set1_ps(m);
    __m256 vs = _mm256_setzero_ps();
    for (; i + 16 <= n; i += 16) {
      request_line(next, i);
      const __m512 e = exp16_nonpos(_mm512_sub_ps(_mm512_loadu_ps(x + i), vmax16));
      _mm512_storeu_ps(ex + i, e);
      vs = _mm256_add_ps(vs, simd::low8(e));
      vs = _mm256_add_ps(vs, simd::high8(e));
      const __m512 pv = _mm512_loadu_ps(ep + i);
      const __m512 g = _mm512_mask_mul_ps(vz, _mm512_cmp_ps_mask(pv, vt, _CMP_GE_OQ), pv, vc);
      if (NT && a64) _mm512_stream_ps(dxp + i, g);
      else simd::put16<NT>(dxp + i, g, simd::kAll16);
    }
    if (i + 8 <= n) {
      const __m256 e = simd::exp8(_mm256_sub_ps(simd::load8(x + i), _mm256_set1_ps(m)));
      _mm256_storeu_ps(ex + i, e);
      vs = _mm256_add_ps(vs, e);
    }
    s = simd::hsum(vs);
  }
  for (int64_t j = (n >= 8 ? i + (i + 8 <= n ? 8 : 0) : 0); j < n; ++j) {
    const float e = std::exp(x[j] - m);
    ex[j] = e;
    s += e;
  }
  for (; i < n; ++i) dxp[i] = ep[i] >= thrp ? ep[i] * cp : 0.f;
  return s;
}

// dx = e c over a row, 0 where the product would be below FLT_MIN in magnitude: the e below
// thr = FLT_MIN / |c| are zeroed before the multiply (see the top). e >= 0.
template <bool NT>
TREX_AVX512_FN void row_grad_from_exp512(const float* e, float* dx, int64_t vocab, float c,
                                         float thr) {
  int64_t i = 0;
  const __m512 vc = _mm512_set1_ps(c), vt = _mm512_set1_ps(thr);
  for (; i + 16 <= vocab; i += 16) {
    const __m512 ev = _mm512_loadu_ps(e + i);
    const __m512 kept = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(ev, vt, _CMP_GE_OQ), ev);
    simd::put16<NT>(dx + i, _mm512_mul_ps(kept, vc), simd::kAll16);
  }
  for (; i < vocab; ++i) dx[i] = e[i] >= thr ? e[i] * c : 0.f;
}

template <bool NT, class T>
TREX_AVX512_FN void row_grad512(const T* x, T* dx, int64_t vocab, float shift, float mul) {
  int64_t i = 0;
  const __m512 vl = _mm512_set1_ps(shift), vsc = _mm512_set1_ps(mul);
  for (; i + 16 <= vocab; i += 16)
    simd::put16<NT>(dx + i, _mm512_mul_ps(simd::exp16(_mm512_sub_ps(simd::load16(x + i, simd::kAll16), vl)), vsc),
                    simd::kAll16);
  if (i + 8 <= vocab) {
    simd::store8(dx + i, _mm256_mul_ps(simd::exp8(_mm256_sub_ps(simd::load8(x + i), _mm256_set1_ps(shift))),
                                       _mm256_set1_ps(mul)));
    i += 8;
  }
  for (; i < vocab; ++i) st(dx + i, std::exp(ld(x + i) - shift) * mul);
}

#endif

template <class T>
float span_max_any(const T* x, int64_t n, bool wide) {
#ifdef TREX_ELEM_AVX2
  if (wide) return span_max512(x, n);
#endif
  (void)wide;
  return span_max(x, n);
}
template <class T>
float span_sum_exp_any(const T* x, int64_t n, float m, bool wide, const T* next = nullptr,
                       float* e = nullptr) {
#ifdef TREX_ELEM_AVX2
  if (wide) return span_sum_exp512(x, n, m, next, e);
#endif
  (void)wide;
  return span_sum_exp(x, n, m, next, e);
}

// The gradient pass from the kept exps (fp32 rows): scale exp(x - lse) = e scale / sum.
void row_grad_from_exp(const float* e, float* dx, int64_t vocab, float c, bool wide, bool nt) {
  const float thr = c == 0.f ? std::numeric_limits<float>::infinity()
                             : std::numeric_limits<float>::min() / std::fabs(c);
#ifdef TREX_ELEM_AVX2
  if (wide) {
    return nt ? row_grad_from_exp512<true>(e, dx, vocab, c, thr)
              : row_grad_from_exp512<false>(e, dx, vocab, c, thr);
  }
#endif
  (void)wide;
  (void)nt;
  int64_t i = 0;
#ifdef TREX_ELEM_AVX2
  const __m256 vc = _mm256_set1_ps(c), vt = _mm256_set1_ps(thr);
  for (; i + 8 <= vocab; i += 8) {
    const __m256 ev = _mm256_loadu_ps(e + i);
    const __m256 kept = _mm256_and_ps(ev, _mm256_cmp_ps(ev, vt, _CMP_GE_OQ));
    _mm256_storeu_ps(dx + i, _mm256_mul_ps(kept, vc));
  }
#endif
  for (; i < vocab; ++i) dx[i] = e[i] >= thr ? e[i] * c : 0.f;
}

// log sum exp of one row. tile 0 (the built-in): a max pass, then a sum-of-exp pass that finds
// the row in L2. tile > 0: both passes per tile of that many logits (the tile stays in L1),
// the running sum rescaled when the maximum grows (online softmax); one tile covering the row
// gives the built-in's bits. next: the row after (null for none), requested into L2 by the
// built-in's sum pass. e (may be null): the built-in keeps each exp(x - m) there and sets *sum
// (the tiled passes do neither).
template <class T>
float row_lse(const T* x, int64_t vocab, int64_t tile, bool wide, const T* next, float* e,
              float* sum) {
  if (tile <= 0 || tile >= vocab) {
    float m = span_max_any(x, vocab, wide);
    const float s = span_sum_exp_any(x, vocab, m, wide, next, e);
    if (e) *sum = s;
    return m + std::log(s);
  }
  float m = -std::numeric_limits<float>::infinity(), s = 0.f;
  for (int64_t t0 = 0; t0 < vocab; t0 += tile) {
    const int64_t n = std::min(tile, vocab - t0);
    const float mt = std::max(m, span_max_any(x + t0, n, wide));
    s = (s == 0.f ? 0.f : s * std::exp(m - mt)) + span_sum_exp_any(x + t0, n, mt, wide);
    m = mt;
  }
  return m + std::log(s);
}

// dx = scale exp(x - lse). For scale > 0 the scale is folded into the exponent,
// exp(x - (lse - ln scale)): multiplying a tiny probability by the scale afterwards would make
// subnormal numbers, which cost a microcode assist each (20x slower on heavy-tailed logits).
template <class T>
void row_grad(const T* x, T* dx, int64_t vocab, float lse, float scale, bool wide, bool nt) {
  const bool fold = scale > 0.f;
  const float shift = fold ? lse - std::log(scale) : lse, mul = fold ? 1.f : scale;
#ifdef TREX_ELEM_AVX2
  if (wide) return nt ? row_grad512<true>(x, dx, vocab, shift, mul) : row_grad512<false>(x, dx, vocab, shift, mul);
#endif
  (void)wide;
  (void)nt;
  int64_t i = 0;
#ifdef TREX_ELEM_AVX2
  __m256 vl = _mm256_set1_ps(shift), vsc = _mm256_set1_ps(mul);
  for (; i + 8 <= vocab; i += 8)
    simd::store8(dx + i, _mm256_mul_ps(simd::exp8(_mm256_sub_ps(simd::load8(x + i), vl)), vsc));
#endif
  for (; i < vocab; ++i) st(dx + i, std::exp(ld(x + i) - shift) * mul);
}

#ifdef TREX_ELEM_AVX2
// The built-in fp32 path with a gradient on AVX-512 (see the top): each thread that comes starts
// on a block of its own among the first `threads` (blocks of `grain` rows), so every thread has
// work even when there are only as many blocks as threads (2 rows of a large vocab, grain 1:
// claiming the first block too would let the thread that starts first take both); a first block
// whose worker came too late to the job (run_dynamic: the caller never waits for a wake-up) is
// taken after all the others. Later blocks are taken in turn, as parallel_for would, each
// claimed when its thread starts its current block (claiming at the block's last row measured
// slower at 4 and 512 rows), so the sum pass of the block's last row requests the row this thread
// reads next (before, the row after, which the other thread usually took, into the wrong core's L2). Each row's gradient
// is written during the next row's sum pass (span_sum_exp_grad512), the thread's last row alone;
// two rows of exps per thread. Every element's operations are those of the passes apart.
void ce_rows_fp32_512(const float* logits, const int32_t* targets, float* loss, float* dlogits,
                      int64_t rows, int64_t vocab, float grad_scale, int64_t grain, bool nt,
                      core::ThreadPool& tp) {
  const int64_t n_blocks = (rows + grain - 1) / grain;
  const int64_t threads = tp.num_threads();
  const int64_t first_blocks = std::min(threads, n_blocks);
  std::atomic<int64_t> next_first{0};        // blocks [0, first_blocks): one per thread first
  std::atomic<int64_t> next_block{threads};  // then these, in turn
  tp.run_dynamic([&](int) {
    thread_local std::vector<float> buf;  // this row's exps and the pending row's
    if (buf.size() < size_t(2 * vocab)) buf.resize(size_t(2 * vocab));
    float* const ebuf[2] = {buf.data(), buf.data() + vocab};
    int cur = 0;
    struct Pending {  // a row whose gradient is still to be written
      const float* e = nullptr;  // null: none
      float* dx = nullptr;
      float c = 0.f, thr = 0.f, target_value = 0.f;
      int64_t target = 0;
    } pend;
    auto claim = [&]() {
      const int64_t b = next_block.fetch_add(1, std::memory_order_relaxed);
      if (b < n_blocks) return b;
      const int64_t f = next_first.fetch_add(1, std::memory_order_relaxed);  // a late worker's
      return f < first_blocks ? f : int64_t(-1);
    };
    auto finish_pending = [&]() {  // after the row's gradient: its target element
      pend.dx[pend.target] = pend.target_value;
      pend.e = nullptr;
    };
    // The row whose logits this thread reads next after rows [r, hi) of its block and before the
    // block nb (-1: none): ignored rows are skipped, as their logits are never read (requesting
    // them cost a fifth of the reads where a fifth of the rows are ignored).
    auto next_read = [&](int64_t r, int64_t hi, int64_t nb) -> int64_t {
      for (; r < hi; ++r)
        if (targets[r] >= 0) return r;
      if (nb < 0) return -1;
      for (int64_t q = nb * grain, qe = std::min(rows, q + grain); q < qe; ++q)
        if (targets[q] >= 0) return q;
      return -1;
    };
    const int64_t first = next_first.fetch_add(1, std::memory_order_relaxed);
    for (int64_t b = first < first_blocks ? first : claim(); b >= 0;) {
      const int64_t nb = claim();
      const int64_t lo = b * grain, hi = std::min(rows, lo + grain);
      for (int64_t r = lo; r < hi; ++r) {
        const int32_t tgt = targets[r];
        if (tgt < 0) {
          loss[r] = 0.f;
          zero_row(dlogits + r * vocab, vocab, nt);
          continue;
        }
        // Looked up only for rows that read their logits: a run of k ignored rows would
        // otherwise rescan itself k times.
        const int64_t rn = next_read(r + 1, hi, nb);
        const float* x = logits + r * vocab;
        const float* xn = rn >= 0 ? logits + rn * vocab : nullptr;
        const float m = span_max512(x, vocab);
        float* e = ebuf[cur];
        float sum;
        if (pend.e) {
          sum = nt ? span_sum_exp_grad512<true>(x, vocab, m, xn, e, pend.e, pend.dx, pend.c, pend.thr)
                   : span_sum_exp_grad512<false>(x, vocab, m, xn, e, pend.e, pend.dx, pend.c, pend.thr);
          finish_pending();
        } else {
          sum = span_sum_exp512(x, vocab, m, xn, e);
        }
        const float lse = m + std::log(sum);
        const float xt = x[tgt];  // read before an in-place gradient overwrites it
        loss[r] = lse - xt;
        const float c = grad_scale / sum;
        pend.e = e;
        pend.dx = dlogits + r * vocab;
        pend.c = c;
        pend.thr = c == 0.f ? std::numeric_limits<float>::infinity()
                            : std::numeric_limits<float>::min() / std::fabs(c);
        pend.target = tgt;
        pend.target_value = (std::exp(xt - lse) - 1.f) * grad_scale;
        cur ^= 1;
      }
      b = nb;
    }
    if (pend.e) {
      row_grad_from_exp(pend.e, pend.dx, vocab, pend.c, true, nt);
      finish_pending();
    }
    simd::fence_streams(nt);
  });
}
#endif

}  // namespace

template <class T>
void cross_entropy_forward_backward(const T* logits, const int32_t* targets, float* loss,
                                    T* dlogits, int64_t rows, int64_t vocab, float grad_scale,
                                    core::ThreadPool* pool) {
  if (rows <= 0) return;
  core::trace_count(0, 2.0 * double(rows * vocab) * sizeof(T));  // logits in, dlogits out
  core::ThreadPool& tp = core::pool_or_default(pool);
  const RowBlocking rb = row_blocking("cross_entropy", rows, vocab);
  const bool wide = row_isa() == core::Isa::kAvx512;
  // Streaming stores only on the 16-lane path, whose full steps cover every row's body when rows
  // start on 32-byte boundaries (use_streaming checks both, and the size).
  const bool nt = wide && dlogits && simd::use_streaming<T>(rows * vocab, vocab, {dlogits}, rb.stream);
  // fp32 rows with a gradient keep their exps (see the top) in a per-thread buffer of one row.
  const bool keep_exps =
      std::is_same_v<T, float> && dlogits && (rb.vocab_tile <= 0 || rb.vocab_tile >= vocab);
#ifdef TREX_ELEM_AVX2
  if constexpr (std::is_same_v<T, float>) {
    if (keep_exps && wide)
      return ce_rows_fp32_512(logits, targets, loss, dlogits, rows, vocab, grad_scale, rb.grain, nt, tp);
  }
#endif
  tp.parallel_for(0, rows, rb.grain, [&](int64_t lo, int64_t hi) {
    thread_local std::vector<float> exps;
    if (keep_exps && exps.size() < size_t(vocab)) exps.resize(size_t(vocab));
    float* e = keep_exps ? exps.data() : nullptr;
    for (int64_t r = lo; r < hi; ++r) {
      const T* x = logits + r * vocab;
      int32_t tgt = targets[r];
      if (tgt < 0) {
        loss[r] = 0.f;
        if (dlogits) zero_row(dlogits + r * vocab, vocab, nt);
        continue;
      }
      float sum = 0.f;
      float lse = row_lse(x, vocab, rb.vocab_tile, wide, r + 1 < rows ? x + vocab : nullptr, e, &sum);
      float xt = ld(x + tgt);  // read before an in-place gradient overwrites it
      loss[r] = lse - xt;
      if (!dlogits) continue;
      T* dx = dlogits + r * vocab;
      if constexpr (std::is_same_v<T, float>) {
        if (e) row_grad_from_exp(e, dx, vocab, grad_scale / sum, wide, nt);
        else row_grad(x, dx, vocab, lse, grad_scale, wide, nt);
      } else {
        row_grad(x, dx, vocab, lse, grad_scale, wide, nt);
      }
      st(dx + tgt, (std::exp(xt - lse) - 1.f) * grad_scale);
    }
    simd::fence_streams(nt);
  });
}

template void cross_entropy_forward_backward<float>(const float*, const int32_t*, float*, float*,
                                                    int64_t, int64_t, float, core::ThreadPool*);
template void cross_entropy_forward_backward<core::bf16>(const core::bf16*, const int32_t*, float*,
                                                         core::bf16*, int64_t, int64_t, float,
                                                         core::ThreadPool*);

}  // namespace trex::kernels
