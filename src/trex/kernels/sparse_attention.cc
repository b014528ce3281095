// Fused shared-KV sparse attention. Per query token: the H x |S_t| scores S = tau Q K^T and the
// output O = P K are register-tiled products over the key rows where they lie (attention_tiles.h:
// no gather or packing for fp32; bf16 keys are widened once into a block), the window's scores
// over the window keys as columns of a per-thread transposed block (KeyColumns); the softmax
// with the sink runs on S in place. The backward recomputes S and P from lse and runs the
// products dP = dO K^T, dQ = tau dS K and dK = tau dS^T Q + P^T dO the same way (dK as one chain
// of 2H products per key row), added straight into the chunk's accumulator rows.
// Token chunks: the backward's key gradients are scatter-adds, which collide across queries;
// each of a fixed number of token chunks owns a private window slice and compressed-entry block
// of the workspace, reduced afterwards in chunk order (deterministic, no atomics).
// GCC 12 reports false -Wuninitialized / -Wmaybe-uninitialized warnings inside its own AVX-512
// headers when _mm512_shuffle_f32x4, _mm512_unpacklo/hi_ps, _mm512_reduce_add_ps and the 256-bit
// extracts are inlined (transpose16, row_dot_sum, exp_row): the undefined source operand of a
// masked intrinsic, GCC bug 105593 (~15 warnings per build of this file). The warning is checked
// against the state at the header's own lines, so it is silenced only while immintrin.h is read,
// before anything else includes it; warnings about this file's own code stay on.
#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
#include "trex/kernels/sparse_attention.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "trex/core/trace.h"
#include "trex/kernels/elementwise_simd.h"
#include "trex/kernels/elementwise_simd512.h"
#include "trex/kernels/attention_tiles.h"
#include "trex/kernels/sparse_attention_log.h"
#include "trex/kernels/tuning.h"
#include "trex/kernels/tuning_builtins.h"

namespace trex::kernels {

std::vector<int32_t> sparse_attention_dense_index(int64_t s, int ratio, int64_t n_comp,
                                                  int64_t* k_comp) {
  int64_t k = std::max<int64_t>(0, std::min<int64_t>(n_comp, s / ratio));
  *k_comp = k;
  std::vector<int32_t> idx(static_cast<size_t>(s * k), -1);
  for (int64_t t = 0; t < s; ++t) {
    int64_t v = std::min<int64_t>(k, (t + 1) / ratio);
    for (int64_t i = 0; i < v; ++i) idx[size_t(t * k + i)] = int32_t(i);
  }
  return idx;
}

namespace {

using simd::ld;
using simd::st;

// The keys of query t: window rows first, then the used compressed slots (slot[j] = the comp_idx
// column of compressed key j >= nw, for comp_prob and the backward; unset for window keys).
// fp32 storage: the rows' pointers go straight into f32 (the products' row pointers); bf16:
// into rows, widened by key_rows.
struct KeySet {
  int64_t n = 0, nw = 0;
  std::vector<const void*> rows;
  std::vector<const float*> f32;
  std::vector<int64_t> slot;
  std::vector<int64_t> target;  // backward: row of the chunk's window slice or comp block
};

template <class T>
void key_set(const T* kv, const T* kv_comp, const int32_t* comp_idx, const SparseAttnShape& sh,
             int64_t t, KeySet* ks) {
  int64_t lo = std::max<int64_t>(0, t - sh.window + 1);
  ks->nw = t - lo + 1;
  // Sized once for the most keys a query has (resize keeps the capacity), filled by index.
  constexpr bool kF32 = std::is_same_v<T, float>;
  if constexpr (kF32)
    ks->f32.resize(size_t(sh.window + sh.k_comp));
  else
    ks->rows.resize(size_t(sh.window + sh.k_comp));
  ks->slot.resize(size_t(sh.window + sh.k_comp));
  int64_t n = 0;
  for (int64_t j = lo; j <= t; ++j, ++n) {
    if constexpr (kF32)
      ks->f32[size_t(n)] = kv + j * sh.hd;
    else
      ks->rows[size_t(n)] = kv + j * sh.hd;
  }
  for (int64_t c = 0; c < sh.k_comp; ++c) {
    int32_t i = comp_idx[t * sh.k_comp + c];
    if (i < 0) continue;
    if constexpr (kF32)
      ks->f32[size_t(n)] = kv_comp + int64_t(i) * sh.hd;
    else
      ks->rows[size_t(n)] = kv_comp + int64_t(i) * sh.hd;
    ks->slot[size_t(n)] = c;
    ++n;
  }
  ks->n = n;
}

template <class T>
void to_f32(const T* src, float* dst, int64_t n) {
  int64_t i = 0;
#ifdef TREX_ELEM_AVX2
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, simd::load8(src + i));
#endif
  for (; i < n; ++i) dst[i] = ld(src + i);
}

template <class T>
void from_f32(const float* src, T* dst, int64_t n) {
  int64_t i = 0;
#ifdef TREX_ELEM_AVX2
  for (; i + 8 <= n; i += 8) simd::store8(dst + i, _mm256_loadu_ps(src + i));
#endif
  for (; i < n; ++i) st(dst + i, src[i]);
}

// fp32 pointers to the key rows: the rows themselves for fp32 storage (key_set's f32, no
// copy), else widened into K (pointers in rows).
template <class T>
const float* const* key_rows(const KeySet& ks, int64_t hd, float* K, std::vector<const float*>& rows) {
  if constexpr (std::is_same_v<T, float>) {
    return ks.f32.data();
  } else {
    rows.resize(size_t(ks.n));
    for (int64_t j = 0; j < ks.n; ++j) {
      to_f32(static_cast<const T*>(ks.rows[size_t(j)]), K + j * hd, hd);
      rows[size_t(j)] = K + j * hd;
    }
    return rows.data();
  }
}

// Pointers to the H rows of a token's [H, hd] block.
void head_rows(const float* base, int64_t H, int64_t hd, std::vector<const float*>& rows) {
  rows.resize(size_t(H));
  for (int64_t h = 0; h < H; ++h) rows[size_t(h)] = base + h * hd;
}

// max(m, x_0, ..., x_{n-1}), as the scalar loop m = std::max(m, x_j) gives it for finite x:
// a maximum does not round, so the lanes may take the elements in any order.
float row_max(const float* x, int64_t n, float m) {
  int64_t j = 0;
#ifdef TREX_ELEM_AVX2
  if (n >= 8) {
    __m256 vm = _mm256_set1_ps(m);
    for (; j + 8 <= n; j += 8) vm = _mm256_max_ps(_mm256_loadu_ps(x + j), vm);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, vm);
    for (float v : lanes) m = std::max(m, v);
  }
#endif
  for (; j < n; ++j) m = std::max(m, x[j]);
  return m;
}

#if defined(TREX_ELEM_AVX2) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && \
    defined(__AVX512VL__)
// exp(x - m) of the k < 8 elements at x in place, as exp8 gives each; returns them in lanes
// 0..k-1 and zeros above (the lanes past k are neither read nor written). The rows' last
// n mod 8 elements (ratio-128 layers: 64 + 0..16 keys) had been k scalar std::exp calls.
inline __m256 exp_tail8(float* x, int64_t k, __m256 vm) {
  const __mmask8 mk = __mmask8((1u << k) - 1u);
  const __m256 e = _mm256_maskz_mov_ps(mk, simd::exp8(_mm256_sub_ps(_mm256_maskz_loadu_ps(mk, x), vm)));
  _mm256_mask_storeu_ps(x, mk, e);
  return e;
}
#endif

// exp(x - m) over a row, in place; returns the sum. The sum is 8 lanes added in element order
// (lane l takes elements l, l + 8, ...), then simd::hsum: the AVX-512 loop adds each half of its
// 16 exponentials in turn, so it sums in that same order; on AVX-512 the last n mod 8 elements
// are one masked step into the same lanes (exp_tail8), elsewhere a scalar tail after hsum.
float exp_row(float* x, int64_t n, float m) {
  int64_t j = 0;
  float sum = 0.f;
#ifdef TREX_ELEM_AVX2
  __m256 vm = _mm256_set1_ps(m), acc = _mm256_setzero_ps();
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
  // simd::exp16 is exp8's operations lane by lane (elementwise_simd512.h), so every lane has exp8's bits.
  const __m512 vm16 = _mm512_set1_ps(m);
  for (; j + 16 <= n; j += 16) {
    __m512 e = simd::exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j), vm16));
    _mm512_storeu_ps(x + j, e);
    acc = _mm256_add_ps(acc, _mm512_castps512_ps256(e));
    acc = _mm256_add_ps(acc, _mm512_extractf32x8_ps(e, 1));
  }
#endif
  for (; j + 8 <= n; j += 8) {
    __m256 e = simd::exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), vm));
    _mm256_storeu_ps(x + j, e);
    acc = _mm256_add_ps(acc, e);
  }
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
  if (j < n) {  // the last n - j < 8 elements as one masked step (exp_tail8)
    acc = _mm256_add_ps(acc, exp_tail8(x + j, n - j, vm));
    j = n;
  }
#endif
  sum = simd::hsum(acc);
#endif
  for (; j < n; ++j) {
    x[j] = std::exp(x[j] - m);
    sum += x[j];
  }
  return sum;
}

// exp_row on the 8 rows x + r ld (r < 8), each with its own m[r]; sums[r] is what exp_row
// returns for row r. The rows' steps are interleaved and each row takes exp_row's operations in
// exp_row's order (the same bits): one row of the step's 64-128 keys is a few polynomial steps
// and a chain of adds, too short for the core to overlap; 8 rows side by side keep it busy.
void exp_rows8(float* x, int64_t ld, int64_t n, const float* m, float* sums) {
#if defined(TREX_ELEM_AVX2) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && \
    defined(__AVX512VL__)
  __m256 acc[8];
#pragma GCC unroll 8
  for (int r = 0; r < 8; ++r) acc[r] = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) {
      float* xr = x + r * ld + j;
      const __m512 e = simd::exp16(_mm512_sub_ps(_mm512_loadu_ps(xr), _mm512_set1_ps(m[r])));
      _mm512_storeu_ps(xr, e);
      acc[r] = _mm256_add_ps(acc[r], simd::low8(e));  // exp_row's halves (see simd::low8)
      acc[r] = _mm256_add_ps(acc[r], simd::high8(e));
    }
  }
  for (; j + 8 <= n; j += 8) {
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) {
      float* xr = x + r * ld + j;
      const __m256 e = simd::exp8(_mm256_sub_ps(_mm256_loadu_ps(xr), _mm256_set1_ps(m[r])));
      _mm256_storeu_ps(xr, e);
      acc[r] = _mm256_add_ps(acc[r], e);
    }
  }
  if (j < n) {
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) acc[r] = _mm256_add_ps(acc[r], exp_tail8(x + r * ld + j, n - j, _mm256_set1_ps(m[r])));
  }
  for (int r = 0; r < 8; ++r) sums[r] = simd::hsum(acc[r]);
#else
  for (int r = 0; r < 8; ++r) sums[r] = exp_row(x + r * ld, n, m[r]);
#endif
}


// The softmax with the sink of H rows of n scores in place (row h at S + h n), lse[h] = its log
// normaliser: per row the max (with the sink), exp_row, the sum plus the sink's term, then the
// row times the inverse sum; 8 rows at a time through exp_rows8 (the same operations per row),
// whose 8 sinks' exps, inverse sums and logs are one vector step each on AVX-512 (exp8,
// log8_from_one of sparse_attention_log.h: 16 scalar libm calls a token had been ~2% of the
// forward's profile).
void softmax_rows(float* S, int64_t H, int64_t n, const float* sink, float* lse) {
  int64_t h0 = 0;
  for (; h0 + 8 <= H; h0 += 8) {
    float m[8], sums[8], inv[8];
    for (int r = 0; r < 8; ++r) m[r] = row_max(S + (h0 + r) * n, n, sink[h0 + r]);
    exp_rows8(S + h0 * n, n, n, m, sums);
#if defined(TREX_ELEM_AVX2) && defined(TREX_ATTN_HAVE_LOG8)
    const __m256 vm = _mm256_loadu_ps(m);
    const __m256 zs = _mm256_add_ps(_mm256_loadu_ps(sums),
                                    simd::exp8(_mm256_sub_ps(_mm256_loadu_ps(sink + h0), vm)));
    _mm256_storeu_ps(inv, _mm256_div_ps(_mm256_set1_ps(1.f), zs));
    _mm256_storeu_ps(lse + h0, _mm256_add_ps(vm, attn_detail::log8_from_one(zs)));
#else
    for (int r = 0; r < 8; ++r) {
      const float zs = sums[r] + std::exp(sink[h0 + r] - m[r]);
      inv[r] = 1.f / zs;
      lse[h0 + r] = m[r] + std::log(zs);
    }
#endif
    for (int r = 0; r < 8; ++r) {
      float* srow = S + (h0 + r) * n;
      for (int64_t j = 0; j < n; ++j) srow[j] *= inv[r];
    }
  }
  for (int64_t h = h0; h < H; ++h) {
    float* srow = S + h * n;
    const float m = row_max(srow, n, sink[h]);
    float zs = exp_row(srow, n, m) + std::exp(sink[h] - m);
    float inv = 1.f / zs;
    for (int64_t j = 0; j < n; ++j) srow[j] *= inv;
    lse[h] = m + std::log(zs);
  }
}

// comp_prob of one token: cp[slot[j]] = sum over heads h (in order, from 0) of P[h][j] for the
// compressed keys j in [nw, n); the other columns 0. The slots of one token are distinct, so this
// is the head-by-head accumulation into a zeroed cp, summed per key instead (the same additions).
void comp_prob_row(const float* P, int64_t H, int64_t n, int64_t nw, const int64_t* slot, float* cp,
                   int64_t k_comp) {
  std::fill(cp, cp + k_comp, 0.f);
  int64_t j = nw;
#ifdef __AVX512F__
  alignas(64) float v[16];
  for (; j + 16 <= n; j += 16) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t h = 0; h < H; ++h) acc = _mm512_add_ps(acc, _mm512_loadu_ps(P + h * n + j));
    _mm512_store_ps(v, acc);
    for (int l = 0; l < 16; ++l) cp[slot[j + l]] = v[l];
  }
#endif
  for (; j < n; ++j) {
    float a = 0.f;
    for (int64_t h = 0; h < H; ++h) a += P[h * n + j];
    cp[slot[j]] = a;
  }
}

// sum_j a_j b_j into *dot and sum_j a_j into *sum, in a fixed order: AVX-512, 16 chains each
// (lane l over j = l mod 16, the last partial vector masked) then _mm512_reduce_add_ps's tree;
// else a scalar chain over j.
void row_dot_sum(const float* a, const float* b, int64_t n, float* dot, float* sum) {
#ifdef __AVX512F__
  __m512 acc = _mm512_setzero_ps(), as = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512 x = _mm512_loadu_ps(a + j);
    acc = _mm512_fmadd_ps(x, _mm512_loadu_ps(b + j), acc);
    as = _mm512_add_ps(as, x);
  }
  if (j < n) {
    const __mmask16 m = __mmask16((1u << (n - j)) - 1);
    const __m512 x = _mm512_maskz_loadu_ps(m, a + j);
    acc = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m, b + j), acc);
    as = _mm512_add_ps(as, x);
  }
  *dot = _mm512_reduce_add_ps(acc);
  *sum = _mm512_reduce_add_ps(as);
#else
  float d = 0.f, s = 0.f;
  for (int64_t j = 0; j < n; ++j) d = std::fma(a[j], b[j], d), s += a[j];
  *dot = d;
  *sum = s;
#endif
}

// Whether [a, a + n) and [b, b + n) share an element (addresses compared as integers: the two
// pointers need not point into one array).
template <class T>
[[maybe_unused]] bool overlaps(const T* a, const T* b, int64_t n) {
  const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  const auto bytes = std::uintptr_t(n) * sizeof(T);
  return x < y + bytes && y < x + bytes;
}

// src itself for fp32 storage, else src widened into buf.
template <class T>
const float* f32_rows(const T* src, float* buf, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    return src;
  } else {
    to_f32(src, buf, n);
    return buf;
  }
}

// Requests the lines of [p, p + n) into L2 ahead of their use. A token's q and d_o rows (4 KiB
// each at the step's shape, one page: the hardware prefetchers stop at page boundaries) are
// read once, in token order, from arrays larger than L2; the window scores broadcast q's
// elements from 8 rows at once and stalled on them (micro-benchmark, one thread: scores alone
// 1142 ns a token with q streaming, 652 with q in L1). Until session 26 q and d_o were
// requested into L1; on session 26's Zen 4 (L1D 32 KiB, which a token's keys already overflow)
// that was slower than L2 in the forward and the backward alike (see their token loops). The
// rows a token writes (o, dq) are requested by outer_tiles, a block's lines at a time.
template <class T>
void prefetch_rows_l2(const T* p, int64_t n) {
  const char* c = reinterpret_cast<const char*>(p);
  const int64_t bytes = n * int64_t(sizeof(T));
  for (int64_t off = 0; off < bytes; off += 64) __builtin_prefetch(c + off, 0, 2);
}

// Requests the first min(n elements, `bytes`) of the row at p into L1.
template <class T>
void prefetch_head_l1(const T* p, int64_t n, int64_t bytes) {
  const char* c = reinterpret_cast<const char*>(p);
  const int64_t end = std::min(bytes, n * int64_t(sizeof(T)));
  for (int64_t off = 0; off < end; off += 64) __builtin_prefetch(c + off, 0, 3);
}

struct Scratch {
  std::vector<float> K, S, Q, O, dO, dP, dQ, D;
  std::vector<const float*> krows, qrows, dorows;
  std::vector<float*> crows;
};

using attn_detail::column_dots;
using attn_detail::dot_tiles;
using attn_detail::outer_tiles;
using attn_detail::outer_tiles_rows;

// The window keys as columns, so that a query's window scores (and d_o products) are
// column_dots: four FMA chains per score, no horizontal reduction (the 4 x 4 dot tiles spend 45
// shuffles and adds per 16 scores on it). Block b holds keys [b W - W, b W + W) (W = window) as
// fp32 columns, [hd][ld]: the window of every query t with t / W = b lies in it, as one run of
// columns, and a block's rows are ld floats apart (an odd number of 64-byte lines, 2 W + 16
// columns or more: column_dots reads up to 15 columns past a window; keys outside [0, s) and
// the extra columns are zero). One transposed [hd][s] block would put each of a query's 128
// rows in its own page (8 KiB apart at s 2048): the column form then ran slower than the dot
// tiles. Per thread, a ring of 4 blocks filled on demand for the current call (a thread's
// jobs come in increasing token order; the two cores share no cache, so each fills its own).
struct KeyColumns {
  static constexpr int kSlots = 4;
  std::vector<float> buf;
  int64_t ld = 0, block_floats = 0;
  uint64_t call = 0;
  int64_t tag[kSlots] = {-1, -1, -1, -1};  // block held by each slot in this call

  // Column of key t - nw + 1 (the first of t's nw window keys) in the block of t; rows ld apart.
  template <class T>
  const float* window(uint64_t id, const T* kv, int64_t s, int64_t hd, int64_t win, int64_t t,
                      int64_t nw) {
    if (id != call) {
      ld = (2 * win + 16 + 15) / 16 * 16;
      if ((ld / 16) % 2 == 0) ld += 16;
      block_floats = hd * ld;
      if (buf.size() < size_t(kSlots * block_floats)) buf.resize(size_t(kSlots * block_floats));
      call = id;
      std::fill_n(tag, kSlots, int64_t(-1));
    }
    const int64_t b = t / win, slot = b % kSlots;
    float* blk = buf.data() + slot * block_floats;
    const int64_t k0 = b * win - win;  // key of column 0
    if (tag[slot] != b) {
      const int64_t lo = std::max<int64_t>(0, k0), hi = std::min(s, k0 + 2 * win);
      // Only the 16 columns after the last key are read unfilled (column_dots reads up to 15
      // past a window, and no window starts before lo); zero them so nothing stale is read.
      const int64_t z0 = hi - k0, z1 = std::min(ld, z0 + 16);
      for (int64_t e = 0; e < hd; ++e) std::fill(blk + e * ld + z0, blk + e * ld + z1, 0.f);
      // Keys [lo, b win) are the last win columns of block b - 1 where the ring holds it (a
      // thread's blocks mostly come in order): copied row by row, not transposed again.
      int64_t from = lo;
      if (const int64_t ps = (b + kSlots - 1) % kSlots; b > 0 && tag[ps] == b - 1) {
        const float* prev = buf.data() + ps * block_floats;  // key j in its column j - k0 + win
        const int64_t c0 = lo - k0, c1 = b * win - k0;
        for (int64_t e = 0; e < hd; ++e) std::copy(prev + e * ld + c0 + win, prev + e * ld + c1 + win, blk + e * ld + c0);
        from = b * win;
      }
      for (int64_t j0 = from; j0 < hi; j0 += 16) {  // 16 keys x all e: rows written in 64 bytes
        const int64_t j1 = std::min(hi, j0 + 16);
        int64_t e = 0;
#ifdef __AVX512F__
        if constexpr (std::is_same_v<T, float>)
          if (j1 - j0 == 16)
            for (; e + 16 <= hd; e += 16) transpose16(kv + j0 * hd + e, hd, blk + e * ld + (j0 - k0), ld);
#endif
        for (; e < hd; ++e) {
          float* row = blk + e * ld - k0;
          for (int64_t j = j0; j < j1; ++j) row[j] = ld_f32(kv + j * hd + e);
        }
      }
      tag[slot] = b;
    }
    return blk + (t - nw + 1 - k0);
  }
  static float ld_f32(const float* p) { return *p; }
  static float ld_f32(const core::bf16* p) { return core::to_float(*p); }
#ifdef __AVX512F__
  // dst[m * ldd + i] = src[i * lds + m] for i, m < 16: 16 rows in, 16 columns out, as 16
  // unpacks, 16 shuffle_ps and 32 shuffle_f32x4, with 16 loads and 16 stores (the scalar loop
  // does 256 of each: a sixteenth).
  static void transpose16(const float* src, int64_t lds, float* dst, int64_t ldd) {
    __m512 t[16], u[16];
    for (int i = 0; i < 8; ++i) {
      const __m512 a = _mm512_loadu_ps(src + (2 * i) * lds), b = _mm512_loadu_ps(src + (2 * i + 1) * lds);
      t[2 * i] = _mm512_unpacklo_ps(a, b);      // per 128-bit lane k: a[4k] b[4k] a[4k+1] b[4k+1]
      t[2 * i + 1] = _mm512_unpackhi_ps(a, b);  // a[4k+2] b[4k+2] a[4k+3] b[4k+3]
    }
    for (int i = 0; i < 4; ++i) {  // u[4i + m], lane k: rows 4i..4i+3 at column 4k + m
      u[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
      u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
      u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
      u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int m = 0; m < 4; ++m) {  // column 4k + m: lane k of u[m], u[4 + m], u[8 + m], u[12 + m]
      const __m512 v0 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x88);
      const __m512 v1 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xDD);
      const __m512 v2 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x88);
      const __m512 v3 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xDD);
      _mm512_storeu_ps(dst + (m + 0) * ldd, _mm512_shuffle_f32x4(v0, v2, 0x88));
      _mm512_storeu_ps(dst + (m + 4) * ldd, _mm512_shuffle_f32x4(v1, v3, 0x88));
      _mm512_storeu_ps(dst + (m + 8) * ldd, _mm512_shuffle_f32x4(v0, v2, 0xDD));
      _mm512_storeu_ps(dst + (m + 12) * ldd, _mm512_shuffle_f32x4(v1, v3, 0xDD));
    }
  }
#endif
};

KeyColumns& thread_key_columns() {
  thread_local KeyColumns kc;
  return kc;
}

// A distinct id per kernel call (KeyColumns' contents belong to one call).
uint64_t next_call_id() {
  static std::atomic<uint64_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed) + 1;
}

// (query, key) pairs the kernel scores: every query's window keys plus its valid compressed
// entries. Counted only for `trex profile analyze` (core::trace_count), so only when tracing.
int64_t scored_pairs(const int32_t* comp_idx, const SparseAttnShape& sh) {
  int64_t pairs = 0;
  for (int64_t t = 0; t < sh.s; ++t) pairs += std::min<int64_t>(sh.window, t + 1);
  for (int64_t i = 0; i < sh.s * sh.k_comp; ++i) pairs += comp_idx[i] >= 0;
  return pairs;
}

}  // namespace

int64_t SparseAttnForwardSplit::pieces() const {
  int64_t n = 0;
  for (int64_t b = 0; b < blocks; ++b) n += (block_end(b) - block_begin(b) + piece - 1) / piece;
  return n;
}

SparseAttnForwardSplit sparse_attention_forward_split(int64_t tokens, int64_t window, int64_t query_block) {
  SparseAttnForwardSplit sp;
  sp.tokens = std::max<int64_t>(tokens, 0);
  sp.block_tokens = std::max<int64_t>(window, 1) * ((63 + std::max<int64_t>(window, 1)) / std::max<int64_t>(window, 1));
  sp.blocks = (sp.tokens + sp.block_tokens - 1) / sp.block_tokens;
  sp.piece = std::max<int64_t>(1, query_block);
  return sp;
}

template <class T>
void sparse_attention_forward(const T* q, const T* kv, const T* kv_comp, const int32_t* comp_idx,
                              const float* sink, T* o, float* lse, float* comp_prob,
                              const SparseAttnShape& sh, core::ThreadPool* pool) {
  if (sh.s <= 0 || sh.heads <= 0 || sh.hd <= 0) return;
  if (sh.window < 1)  // KeyColumns divides by it; checked in every build type, before any write
    throw std::invalid_argument("sparse_attention_forward: window must be >= 1, got " + std::to_string(sh.window));
  if (core::trace_enabled())  // scores and outputs: 4 hd FLOPs per (head, key); q, keys in, o, lse out
    core::trace_count(4.0 * double(sh.heads * sh.hd) * double(scored_pairs(comp_idx, sh)),
                      double((2 * sh.s * sh.heads + sh.s + sh.n_comp) * sh.hd) * sizeof(T) +
                          4.0 * double(sh.s * (sh.k_comp + sh.heads)));
  core::ThreadPool& tp = core::pool_or_default(pool);
  const int64_t H = sh.heads, hd = sh.hd, kmax = sh.window + sh.k_comp;
  const float tau = 1.f / std::sqrt(float(hd));
  const int64_t grain = tuned_or("sparse_attention.fwd", {sh.s, H, hd}, "query_block", builtin::kAttnQueryBlock);
  const uint64_t call = next_call_id();
  // Tokens in groups of kGroup: the scores of the group's tokens first (their windows' columns,
  // as one sweep of overlapping lines), then their outputs (their key rows). Groups of 4 fp32
  // tokens were faster where L1 held more (a token's window columns and key rows together
  // exceeded it, and alternating the two per token reloaded both); on session 26's Zen 4 (L1D
  // 32 KiB, which a token's window columns alone overflow) one token at a time is faster: 1.025x
  // (ratio 128), 1.037x (0), 1.016x (4) the CPU time of groups of 4, 2 threads, 21 alternating
  // rounds, same bits (groups of 2: 0.977x, 0.986x). bf16 keys are widened per token anyway.
  constexpr int64_t kGroup = 1;
  static_assert(kGroup <= KeyColumns::kSlots, "a group's blocks must all stay in the ring");
  constexpr int64_t kPrefetchAhead = 8;  // tokens between a q row's prefetch and its use
  // Where the tokens after a run go on in this thread's order: the run's tokens up to `end`
  // (the rest of its block), then `next`'s first ones (the next block the thread has claimed;
  // -1: none). The q rows requested kPrefetchAhead tokens ahead are this thread's own.
  struct Ahead {
    int64_t end = 0, next = -1, next_end = 0;
    int64_t token(int64_t u) const {
      if (u < end) return u;
      if (next < 0 || next + (u - end) >= next_end) return -1;
      return next + (u - end);
    }
  };
  auto tokens = [&](int64_t t0, int64_t t1, const Ahead& ahead) {
    KeyColumns& kcol = thread_key_columns();
    // Per thread, kept between jobs and calls (a job is a few tokens: allocating and zeroing
    // its buffers each time cost as much as a token's softmax).
    thread_local Scratch w;
    thread_local KeySet ks[kGroup];
    thread_local std::vector<const float*> krows[kGroup], qrows[kGroup];
    w.S.resize(size_t(kGroup * H * kmax));
    if constexpr (!std::is_same_v<T, float>) {  // widened copies; fp32 is used where it lies
      w.K.resize(size_t(kmax * hd));             // (a job is a few tokens: no zero-filling
      w.Q.resize(size_t(H * hd));                // kmax hd floats per job that stay unused)
      w.O.resize(size_t(H * hd));
    }
    const float* kwin[kGroup];
    const float* const* kr[kGroup];  // the group's key row pointers (key_rows)
    for (int64_t g0 = t0; g0 < t1; g0 += kGroup) {
      const int64_t g1 = std::min(t1, g0 + kGroup);
      for (int64_t t = g0; t < g1; ++t) {
        const int64_t i = t - g0;
        key_set(kv, kv_comp, comp_idx, sh, t, &ks[i]);
        kr[i] = key_rows<T>(ks[i], hd, w.K.data(), krows[i]);
        const float* Q = nullptr;
        if constexpr (std::is_same_v<T, float>) {
          Q = q + t * H * hd;
        } else {
          to_f32(q + t * H * hd, w.Q.data(), H * hd);
          Q = w.Q.data();
        }
        head_rows(Q, H, hd, qrows[i]);
        // The group's blocks stay in the ring: its kGroup <= 4 tokens lie in at most 4
        // consecutive blocks, which the ring's 4 slots hold at once.
        kwin[i] = kcol.window(call, kv, sh.s, hd, sh.window, t, ks[i].nw);
      }
      for (int64_t t = g0; t < g1; ++t) {
        const int64_t i = t - g0;
        // The q rows of this thread's token 8 tokens ahead (kPrefetchAhead; with kGroup 1
        // that is 8 groups). The distance barely matters: session 18 (one process alternating
        // the settings, one thread's CPU time, loaded) measured 4, 8, 12 and 16 ahead within 2%
        // of each other at 1, 3 and 4 threads; prefetching nothing cost 1.07-1.40x. Until session
        // 24 it was t + 8 whichever thread took that token: at 2 threads the last 8 tokens of
        // every block job requested the other thread's next job's rows. Into L2, not L1 (session
        // 26, Zen 4, L1D 32 KiB, which a token's window key columns, ~40 KiB, already overflow:
        // lines requested into L1 ahead of use displace lines in use): into L1 the forward took
        // 1.11x the CPU time at ratios 0 and 128, 1.065x at ratio 4 (one process, 21 alternating
        // rounds, same bits). The window scores alone (one thread, q streaming from memory):
        // 75 GFLOP/s prefetching nothing, 69 into L1 8 tokens ahead, 71 into L1 1 ahead, 90 into
        // L2 8 ahead; 110 with q held in L1.
        if (const int64_t u = ahead.token(t + kPrefetchAhead); u >= 0)
          prefetch_rows_l2(q + u * H * hd, H * hd);
        column_dots(H, ks[i].nw, hd, qrows[i].data(), kwin[i], kcol.ld, tau,
                    w.S.data() + i * H * kmax, ks[i].n);
        // The first two lines of each of this thread's next token's q rows into L1, a token's
        // softmax and outputs ahead of its scores: column_dots requests each row's lines 32
        // elements ahead as it goes, which leaves a row's first 32 elements waiting on L2 as the
        // scores start. Session 27, against requesting nothing here, one process alternating,
        // CPU time, load 9-14: 1.026x / 1.036x (ratio 0, 17 and 19 of 21 rounds faster), 1.020x
        // / 1.026x (128), 1.013x (4); the first four lines, 1.018x / 1.006x / 1.016x. (All 64
        // lines one token ahead into L1 had cost 1.1x, session 26.)
        if (const int64_t u = ahead.token(t + 1); u >= 0)
          for (int64_t h = 0; h < H; ++h) prefetch_head_l1(q + (u * H + h) * hd, hd, 128);
      }
      for (int64_t t = g0; t < g1; ++t) {
        const int64_t i = t - g0;
        const int64_t n = ks[i].n, nw = ks[i].nw;
        float* S = w.S.data() + i * H * kmax;
        if (n > nw) dot_tiles(H, n - nw, hd, qrows[i].data(), kr[i] + nw, tau, S + nw, n);
        softmax_rows(S, H, n, sink, lse + t * H);
        if (comp_prob)
          comp_prob_row(S, H, n, nw, ks[i].slot.data(), comp_prob + t * sh.k_comp, sh.k_comp);
        if constexpr (!std::is_same_v<T, float>) {  // one token per group: its output now
          outer_tiles(H, hd, n, S, n, 1, kr[i], w.O.data(), hd, false);
          from_f32(w.O.data(), o + t * H * hd, H * hd);
        }
      }
      if constexpr (std::is_same_v<T, float>) {
        for (int64_t t = g0; t < g1; ++t) {
          const int64_t i = t - g0, n = ks[i].n;
          outer_tiles(H, hd, n, w.S.data() + i * H * kmax, n, 1, kr[i], o + t * H * hd,
                      hd, false);
        }
      }
    }
  };
  // Jobs (sparse_attention_forward_split, each thread's order SparseAttnForwardWalk; aura's model
  // of query_block plays out the same two):
  // blocks of block_tokens tokens (whole key-column blocks of KeyColumns), each run in
  // query_block-token pieces taken from the block's own counter. Thread i of T starts at block
  // i n / T and claims blocks upward from there (past the last, on from block 0), skipping those
  // already claimed; it claims its next block as it starts one, so its q requests 8 tokens ahead
  // run on into its own next block. Once every block is claimed, a thread joins the blocks still
  // running and takes their remaining pieces beside their owners: the threads finish within a piece
  // of each other, and only those last blocks are filled by two threads. Until session 24 the jobs
  // were the blocks in turn over the first seven eighths of the tokens, then query_block-token
  // jobs: the tail's blocks were filled by both threads, the requests 8 tokens ahead at the end of
  // every job went to the other thread's tokens, and the threads alternated blocks, so half of each
  // block's key columns and rows (its columns hold the keys of windows b - 1 and b) had last been
  // read by the other core (perf of blocks claimed in turn, 2 threads against 1: transpose16 +65%).
  // Each token is computed the same way in any piece: the same bits for any thread count.
  const SparseAttnForwardSplit split = sparse_attention_forward_split(sh.s, sh.window, grain);
  const int64_t n_blocks = split.blocks, piece = split.piece;
  struct alignas(64) Block {  // a line each: a block's owner and a helper share one line only
    std::atomic<int64_t> taken{0};  // tokens of the block handed out
    std::atomic<int> claimed{0};
  };
  std::unique_ptr<Block[]> blocks(new Block[size_t(n_blocks)]);
  // The first unclaimed block from `from` on (wrapping), now claimed; n_blocks if none is left.
  auto claim = [&](int64_t from) {
    for (int64_t i = 0; i < n_blocks; ++i) {
      const int64_t b = (from + i) % n_blocks;
      if (!blocks[size_t(b)].claimed.load(std::memory_order_relaxed) &&
          !blocks[size_t(b)].claimed.exchange(1, std::memory_order_relaxed))
        return b;
    }
    return n_blocks;
  };
  // Runs block b's pieces that are left; `after` is the block this thread runs next.
  auto run_block = [&](int64_t b, int64_t after) {
    Ahead ahead;
    ahead.end = split.block_end(b);
    if (after < n_blocks) ahead.next = split.block_begin(after), ahead.next_end = split.block_end(after);
    for (;;) {
      const int64_t t0 = split.block_begin(b) + blocks[size_t(b)].taken.fetch_add(piece, std::memory_order_relaxed);
      if (t0 >= ahead.end) return;
      tokens(t0, std::min(ahead.end, t0 + piece), ahead);
    }
  };
  // run_dynamic: the blocks go to whichever threads start before the caller's part ends (the
  // walk claims every block that no thread has, wrapping, so the caller alone runs them all if
  // no worker comes); with run() the caller waited at the end for every worker's wake-up, and a
  // worker woken late under load found nothing left to do but still held the call. Each token
  // is computed the same way whoever runs it: the same bits.
  const int64_t n_threads = tp.num_threads();
  tp.run_dynamic([&](int thread) {
    SparseAttnForwardWalk walk(n_blocks);  // the order aura's model plays out too
    walk.begin(split, thread, n_threads, claim);
    walk.claim_after(claim);
    if (const int64_t b = walk.block(); b < n_blocks)  // the first block's first rows (later
      for (int64_t t = split.block_begin(b);           // blocks' come from the block before)
           t < std::min(split.block_end(b), split.block_begin(b) + kPrefetchAhead); ++t)
        prefetch_rows_l2(q + t * H * hd, H * hd);
    for (int64_t b = walk.block(); b < n_blocks; walk.next(claim), b = walk.block()) run_block(b, walk.next_own());
  });
}

namespace {

struct ChunkPlan {
  int64_t chunks = 0, len = 0;   // token chunks of len tokens (the last may be shorter)
  int64_t win_rows = 0;          // rows of a chunk's window slice: len + window - 1
  int64_t per_chunk = 0;         // floats per chunk: win_rows hd + n_comp hd + H
};

constexpr int64_t kMaxChunks = builtin::kAttnBwdChunks;  // the built-in chunk count and the tunable one's maximum

// About `want` chunks of equal length, independent of the thread count (for determinism).
ChunkPlan plan_with(const SparseAttnShape& sh, int64_t want) {
  ChunkPlan p;
  p.chunks = std::min<int64_t>(want, std::max<int64_t>(1, sh.s));
  p.len = (sh.s + p.chunks - 1) / p.chunks;
  p.chunks = (sh.s + p.len - 1) / p.len;
  p.win_rows = p.len + sh.window - 1;
  p.per_chunk = (p.win_rows + sh.n_comp) * sh.hd + sh.heads;
  return p;
}

// The plan of a call: the tuned chunk count (sparse_attention.bwd `chunks`, 1..16), unless its
// workspace would exceed the built-in plan's, which is what the caller allocated
// (sparse_attention_backward_workspace does not depend on the tuning, so a workspace sized
// before a tuning change still fits after it). Fewer chunks zero and reduce fewer private
// key-gradient slices (each window - 1 + n_comp rows more than its tokens) but give fewer
// parallel jobs; the chunk count changes the order of the final sums, never their terms.
ChunkPlan plan_chunks(const SparseAttnShape& sh) {
  const ChunkPlan builtin = plan_with(sh, kMaxChunks);
  const int64_t want =
      tuned_or("sparse_attention.bwd", {sh.s, sh.heads, sh.hd}, "chunks", kMaxChunks);
  if (want >= kMaxChunks) return builtin;
  const ChunkPlan p = plan_with(sh, want);
  return p.chunks * p.per_chunk <= builtin.chunks * builtin.per_chunk ? p : builtin;
}

}  // namespace

int64_t sparse_attention_backward_workspace(const SparseAttnShape& sh) {
  if (sh.s <= 0) return 0;
  ChunkPlan p = plan_with(sh, kMaxChunks);
  return p.chunks * p.per_chunk;
}

template <class T>
void sparse_attention_backward(const T* q, const T* kv, const T* kv_comp, const int32_t* comp_idx,
                               const float* sink, const float* lse, const T* d_o,
                               T* dq, T* dkv, T* dkv_comp, float* dsink,
                               const SparseAttnShape& sh, float* workspace,
                               core::ThreadPool* pool) {
  const int64_t H = sh.heads, hd = sh.hd, kmax = sh.window + sh.k_comp;
  if (core::trace_enabled() && sh.s > 0 && H > 0 && hd > 0)
    // Scores again, dp, dq and dkey: 10 hd FLOPs per (head, key); q, d_o, keys in, dq, dkeys out.
    core::trace_count(10.0 * double(H * hd) * double(scored_pairs(comp_idx, sh)),
                      double((4 * sh.s * H + 2 * (sh.s + sh.n_comp)) * hd) * sizeof(T) +
                          4.0 * double(sh.s * (sh.k_comp + H)));
  if (sh.s > 0 && H > 0 && hd > 0 && sh.window < 1)  // KeyColumns divides by it; before any write
    throw std::invalid_argument("sparse_attention_backward: window must be >= 1, got " + std::to_string(sh.window));
  for (int64_t h = 0; h < H; ++h) dsink[h] = 0.f;
  if (sh.s <= 0 || H <= 0 || hd <= 0) {
    for (int64_t i = 0; i < sh.n_comp * hd; ++i) st(dkv_comp + i, 0.f);
    return;
  }
  // fp32 q and d_o rows are read in place while dq rows are written (see the header).
  assert(!overlaps(dq, q, sh.s * H * hd) && !overlaps(dq, d_o, sh.s * H * hd));
  core::ThreadPool& tp = core::pool_or_default(pool);
  const float tau = 1.f / std::sqrt(float(hd));
  ChunkPlan plan = plan_chunks(sh);
  std::vector<float> owned;
  if (!workspace) {
    owned.resize(size_t(plan.chunks * plan.per_chunk));
    workspace = owned.data();
  }
  const uint64_t call = next_call_id();
  std::vector<int64_t> comp_hi(size_t(plan.chunks));  // chunk c wrote compressed rows < comp_hi[c]
  tp.parallel_for(0, plan.chunks, 1, [&](int64_t c0, int64_t c1) {
    KeyColumns& kcol = thread_key_columns();
    // Per thread, kept between jobs and calls like the forward's (every element is written before
    // it is read): allocated per job, its ~100 KiB were zero-filled and, freed at the top of the
    // heap and trimmed, faulted in again each time (perf: page clearing ~4% of the backward).
    thread_local Scratch w;
    thread_local KeySet ks;
    w.K.resize(size_t(kmax * hd));
    w.dP.resize(size_t(2 * H * kmax));  // tau dS, then P: one [2H, n] block per token
    w.Q.resize(size_t(H * hd));
    w.dO.resize(size_t(H * hd));
    w.dQ.resize(size_t(H * hd));
    w.D.resize(size_t(H));
    for (int64_t ci = c0; ci < c1; ++ci) {
      // Chunks are handed out last first: a later token has at least as many keys (the window
      // fills, ratio 4's top-k fills up to k, ratio 128's entries grow), so the cheapest chunks
      // come last and the threads finish closer together. Each chunk writes only its own
      // slice, reduced in chunk order below: the order of work changes no bits.
      const int64_t c = plan.chunks - 1 - ci;
      float* win_acc = workspace + c * plan.per_chunk;  // rows: token lo - window + 1 + r
      float* comp_acc = win_acc + plan.win_rows * hd;
      float* sink_acc = comp_acc + sh.n_comp * hd;
      const int64_t tlo = c * plan.len, thi = std::min(sh.s, tlo + plan.len);
      // Only the compressed rows below the chunk's largest index are zeroed and reduced: ratio
      // 4's entries are visible from token 4 i on, so early chunks touch few of the n_comp
      // rows (the block is n_comp hd floats per chunk, 256 KiB at the step's ratio 4).
      int64_t hi = 0;
      for (int64_t i = tlo * sh.k_comp; i < thi * sh.k_comp; ++i) hi = std::max<int64_t>(hi, comp_idx[i] + 1);
      comp_hi[size_t(c)] = hi;
      std::fill(win_acc, comp_acc + hi * hd, 0.f);
      std::fill(sink_acc, sink_acc + H, 0.f);
      const int64_t base = tlo - sh.window + 1;  // token of win_acc row 0 (may be negative)
      for (int64_t t = tlo; t < thi; ++t) {
        key_set(kv, kv_comp, comp_idx, sh, t, &ks);
        const int64_t n = ks.n, nw = ks.nw;
        const float* const* kr = key_rows<T>(ks, hd, w.K.data(), w.krows);
        // fp32 storage is read where it lies; bf16 is widened once per token.
        const float* Q = f32_rows(q + t * H * hd, w.Q.data(), H * hd);
        const float* dO = f32_rows(d_o + t * H * hd, w.dO.data(), H * hd);
        // The next token's rows, into L2 (into L1, session 26, Zen 4: 1.037x the CPU time at
        // ratio 0, 1.040x at 128, 1.011x at 4; 4 tokens ahead into L2 gained less). This
        // token's dq rows are written below.
        if (t + 1 < thi) {
          prefetch_rows_l2(q + (t + 1) * H * hd, H * hd);
          prefetch_rows_l2(d_o + (t + 1) * H * hd, H * hd);
        }
        // qrows: the H rows of q, then the H rows of d_o (the b rows of dK's product).
        head_rows(dO, H, hd, w.dorows);
        head_rows(Q, H, hd, w.qrows);
        w.qrows.insert(w.qrows.end(), w.dorows.begin(), w.dorows.end());
        float* dP = w.dP.data();
        float* S = dP + H * n;
        // The window's scores as the forward computes them (same bits), then the rest.
        const float* kwin = kcol.window(call, kv, sh.s, hd, sh.window, t, nw);
        column_dots(H, nw, hd, w.qrows.data(), kwin, kcol.ld, tau, S, n);
        column_dots(H, nw, hd, w.dorows.data(), kwin, kcol.ld, 1.f, dP, n);
        if (n > nw) {
          dot_tiles(H, n - nw, hd, w.qrows.data(), kr + nw, tau, S + nw, n);
          dot_tiles(H, n - nw, hd, w.dorows.data(), kr + nw, 1.f, dP + nw, n);
        }
        // P = exp(s - lse), 8 heads at a time where there are 8 (exp_rows8: exp_row's bits).
        int64_t hp = 0;
        for (float sums[8]; hp + 8 <= H; hp += 8) exp_rows8(S + hp * n, n, n, lse + t * H + hp, sums);
        for (int64_t h = hp; h < H; ++h) exp_row(S + h * n, n, lse[t * H + h]);
        // D_h = <do_h, o_h> = sum_j p_j dp_j (o_h = sum_j p_j key_j; the sink has no value), from
        // the P and dP rows just computed, in L1: o is not read. Reading o's 4 KiB a token (from
        // L2, prefetched a token ahead) and summing its H hd products was about half of this
        // loop's time (perf, session 20: the product stalled on o's lines).
        // Divided by the recomputed normaliser sum_j p_j + p_sink (1 in exact arithmetic): p =
        // exp(s - lse) carries lse's rounding, a relative error about u |lse| common to the
        // whole row, which sum_j p_j dp_j would carry into D (heavy-tailed scores: dq errors up
        // to 6.6x <do, o>'s); the division cancels it.
        float* D = w.D.data();
        for (int64_t h = 0; h < H; ++h) {
          const float l = lse[t * H + h];
          float* srow = S + h * n;
          float* drow = dP + h * n;
          const float psink = std::exp(sink[h] - l);
          float dot, psum;
          row_dot_sum(srow, drow, n, &dot, &psum);
          D[h] = dot / (psum + psink);
          for (int64_t j = 0; j < n; ++j) drow[j] = tau * srow[j] * (drow[j] - D[h]);  // tau dS
          sink_acc[h] -= psink * D[h];
        }
        // dQ = (tau dS) K;  dK = (tau dS)^T Q + P^T dO, window rows straight into win_acc.
        if constexpr (std::is_same_v<T, float>) {
          outer_tiles(H, hd, n, dP, n, 1, kr, dq + t * H * hd, hd, false);
        } else {
          outer_tiles(H, hd, n, dP, n, 1, kr, w.dQ.data(), hd, false);
          from_f32(w.dQ.data(), dq + t * H * hd, H * hd);
        }
        // Both terms of a key's row in one chain of 2H products (the [tau dS; P] block against
        // [q; d_o]), added to its accumulator row once: the window rows in win_acc, the
        // compressed entries' rows in comp_acc where they lie.
        float* dst = win_acc + (t - nw + 1 - base) * hd;
        outer_tiles(nw, hd, 2 * H, dP, 1, n, w.qrows.data(), dst, hd, true);
        if (n > nw) {
          w.crows.resize(size_t(n - nw));
          for (int64_t j = nw; j < n; ++j)
            w.crows[size_t(j - nw)] =
                comp_acc + int64_t(comp_idx[t * sh.k_comp + ks.slot[size_t(j)]]) * hd;
          outer_tiles_rows(n - nw, hd, 2 * H, dP + nw, 1, n, w.qrows.data(), w.crows.data(), true);
        }
      }
    }
  });
  // Reduce in chunk order. Window key j is in the slices of the chunks whose tokens reach it.
  tp.parallel_for(0, sh.s, 16, [&](int64_t j0, int64_t j1) {
    std::vector<float> acc(static_cast<size_t>(hd));
    for (int64_t j = j0; j < j1; ++j) {
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int64_t c = 0; c < plan.chunks; ++c) {
        const int64_t tlo = c * plan.len, base = tlo - sh.window + 1;
        const int64_t thi = std::min(sh.s, tlo + plan.len);
        if (j < base || j >= thi) continue;
        const float* src = workspace + c * plan.per_chunk + (j - base) * hd;
        for (int64_t e = 0; e < hd; ++e) acc[size_t(e)] += src[e];
      }
      from_f32(acc.data(), dkv + j * hd, hd);
    }
  });
  tp.parallel_for(0, sh.n_comp, 16, [&](int64_t i0, int64_t i1) {
    std::vector<float> acc(static_cast<size_t>(hd));
    for (int64_t i = i0; i < i1; ++i) {
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int64_t c = 0; c < plan.chunks; ++c) {
        // A row the chunk never wrote would add +0.0, which changes no sum here (acc starts at
        // +0.0 and a float sum is -0.0 only if both terms are): skipped, the same bits.
        if (i >= comp_hi[size_t(c)]) continue;
        const float* src = workspace + c * plan.per_chunk + (plan.win_rows + i) * hd;
        for (int64_t e = 0; e < hd; ++e) acc[size_t(e)] += src[e];
      }
      from_f32(acc.data(), dkv_comp + i * hd, hd);
    }
  });
  for (int64_t c = 0; c < plan.chunks; ++c) {
    const float* src = workspace + c * plan.per_chunk + (plan.win_rows + sh.n_comp) * hd;
    for (int64_t h = 0; h < H; ++h) dsink[h] += src[h];
  }
}

#define TREX_SPARSE_ATTN(T)                                                                      \
  template void sparse_attention_forward<T>(const T*, const T*, const T*, const int32_t*,        \
                                            const float*, T*, float*, float*,                    \
                                            const SparseAttnShape&, core::ThreadPool*);          \
  template void sparse_attention_backward<T>(const T*, const T*, const T*, const int32_t*,       \
                                             const float*, const float*, const T*, T*, T*, T*,   \
                                             float*, const SparseAttnShape&, float*,             \
                                             core::ThreadPool*);
TREX_SPARSE_ATTN(float)
TREX_SPARSE_ATTN(core::bf16)
#undef TREX_SPARSE_ATTN

}  // namespace trex::kernels
