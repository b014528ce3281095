// Fused KV compressor: per entry and block of 8 channels, the scores of all rows stay in
// registers: a max pass, then one pass that sums exp and the weighted keys. The backward
// recomputes S and k from kt and zt and writes every gradient in one pass; for ratio != 4 the
// forward can keep its per-channel max, sum and weighted sum (kv_compress_forward_keeping_stats),
// and the backward from them (kv_compress_backward_from_stats) then skips the max and sum passes.
// On AVX-512 (row_isa()) an entry's rows are walked 64 contiguous channels at a time (four
// 16-lane vectors, one cache line each): the 8-channel path touches half a line per row, and at
// ratio 128 the rows are 2 KiB apart, so the 128 rows of a pass fall into 2 of L1's 64 sets and
// every line was fetched again for its second half; the backward also keeps each exp from the
// sum pass (a few KiB per entry) instead of computing it again. Ratio 4 on AVX-512 takes 32
// channels of an entry's 8 rows per step with the scores in registers and requests the lines of
// the steps ahead (forward_r4_512, backward_r4_512). Same operations per channel in the same
// order as the 8-channel path: the paths give the same bits.
#include "trex/kernels/kv_compressor.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "trex/core/aligned_vector.h"
#include "trex/kernels/elementwise_simd.h"
#include "trex/kernels/elementwise_simd512.h"
#include "trex/kernels/row_isa.h"
#include "trex/kernels/tuning.h"
#include "trex/kernels/tuning_builtins.h"

namespace trex::kernels {

int compressor_rows(int64_t i, int ratio, int64_t hd, CompressorRow* rows) {
  int n = 0;
  if (ratio == 4) {
    if (i > 0)
      for (int r = 0; r < 4; ++r) rows[n++] = {4 * (i - 1) + r, 0, r};
    for (int r = 0; r < 4; ++r) rows[n++] = {4 * i + r, hd, r};
    return n;
  }
  for (int r = 0; r < ratio; ++r) rows[n++] = {int64_t(ratio) * i + r, 0, r};
  return n;
}

namespace {

constexpr int kMaxRows = 1024;  // ratio <= 1024 (the model uses 4 and 128)

struct RowOffsets {
  int n = 0;
  int64_t x[2 * kMaxRows];    // into kt / zt (plus channel e)
  int64_t ape[2 * kMaxRows];  // into ape (plus channel e)
};

void entry_offsets(int64_t i, int ratio, int64_t hd, RowOffsets* o) {
  static thread_local CompressorRow rows[2 * kMaxRows];
  int64_t C = compressor_width(ratio, hd);
  o->n = compressor_rows(i, ratio, hd, rows);
  for (int j = 0; j < o->n; ++j) {
    o->x[j] = rows[j].token * C + rows[j].channel_offset;
    o->ape[j] = rows[j].ape_row * C + rows[j].channel_offset;
  }
}

// One channel, scalar: the same arithmetic as the SIMD path, for channel tails. st: the entry's
// statistics rows (kv_compress_forward_keeping_stats; channel e at e, hd and 2 hd on) or null.
void forward_channel(const float* kt, const float* zt, const float* ape, const RowOffsets& o,
                     int64_t e, float* k, float* st, int64_t hd) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < o.n; ++j) mx = std::max(mx, zt[o.x[j] + e] + ape[o.ape[j] + e]);
  float sum = 0.f, acc = 0.f;
  for (int j = 0; j < o.n; ++j) {
    float p = std::exp(zt[o.x[j] + e] + ape[o.ape[j] + e] - mx);
    sum += p;
    acc += p * kt[o.x[j] + e];
  }
  *k = acc / sum;
  if (st) st[e] = mx, st[hd + e] = sum, st[2 * hd + e] = acc;
}

void backward_channel(const float* kt, const float* zt, const float* ape, const RowOffsets& o,
                      int64_t e, float dk, float* dkt, float* dzt, float* dape) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < o.n; ++j) mx = std::max(mx, zt[o.x[j] + e] + ape[o.ape[j] + e]);
  float sum = 0.f, acc = 0.f;
  for (int j = 0; j < o.n; ++j) {
    float p = std::exp(zt[o.x[j] + e] + ape[o.ape[j] + e] - mx);
    sum += p;
    acc += p * kt[o.x[j] + e];
  }
  float k = acc / sum, inv = 1.f / sum;
  for (int j = 0; j < o.n; ++j) {
    float g = std::exp(zt[o.x[j] + e] + ape[o.ape[j] + e] - mx) * inv * dk;
    float dz = g * (kt[o.x[j] + e] - k);
    dkt[o.x[j] + e] = g;
    dzt[o.x[j] + e] = dz;
    dape[o.ape[j] + e] += dz;
  }
}

#ifdef TREX_ELEM_AVX2
inline __m256 score8(const float* zt, const float* ape, const RowOffsets& o, int j, int64_t e) {
  return _mm256_add_ps(_mm256_loadu_ps(zt + o.x[j] + e), _mm256_loadu_ps(ape + o.ape[j] + e));
}

// Max, sum of exp and weighted key sum of 8 channels.
inline void stats8(const float* kt, const float* zt, const float* ape, const RowOffsets& o,
                   int64_t e, __m256* mx, __m256* sum, __m256* acc) {
  __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (int j = 0; j < o.n; ++j) m = _mm256_max_ps(m, score8(zt, ape, o, j, e));
  __m256 s = _mm256_setzero_ps(), a = _mm256_setzero_ps();
  for (int j = 0; j < o.n; ++j) {
    __m256 p = simd::exp8(_mm256_sub_ps(score8(zt, ape, o, j, e), m));
    s = _mm256_add_ps(s, p);
    a = _mm256_fmadd_ps(p, _mm256_loadu_ps(kt + o.x[j] + e), a);
  }
  *mx = m;
  *sum = s;
  *acc = a;
}
#endif


// ---- AVX-512: 64 channels per step ---------------------------------------------------------

constexpr int kVecs512 = 4;  // 16-lane vectors per step: 64 channels

// exp(x) for x = score - max <= 0, which holds for finite scores (no upper clamp). With a NaN
// score, max16's NaN order can leave the max below a later finite score, and a difference over
// 88 then gives inf where a clamped exp gave exp(88); the entry's output is NaN either way.
TREX_AVX512_FN __m512 exp16_nonpos(__m512 x) {
  return simd::exp16_clamped(simd::max16(x, _mm512_set1_ps(-87.f)));
}

// An entry's statistics of channels [e0, e1) (kv_compress_forward_keeping_stats) from the
// per-channel buffers mx, sm, ac (channel c at c - e0) into its stats rows st (channel c at c,
// hd and 2 hd on). st null: none kept.
TREX_AVX512_FN void store_stats512(float* st, int64_t hd, int64_t e0, int64_t e1, const float* mx,
                                   const float* sm, const float* ac) {
  if (!st) return;
  for (int64_t c = e0; c < e1; c += 16) {
    const __mmask16 m = simd::lanes16(c, e1);
    simd::store16(st + c, _mm512_loadu_ps(mx + (c - e0)), m);
    simd::store16(st + hd + c, _mm512_loadu_ps(sm + (c - e0)), m);
    simd::store16(st + 2 * hd + c, _mm512_loadu_ps(ac + (c - e0)), m);
  }
}

// A thread's scratch floats, 64-byte aligned (core::aligned_vector): a std::vector<float> of 128 KiB and more gets
// malloc's mmap chunk, its data 16 bytes past a page, so every 16-lane load and store of the
// buffers below spanned two cache lines (smaller ones sat 16 or 48 bytes off too). Where a
// buffer landed moved the ratio-4 backward by ~10% (session 27: two copies of the same code in
// one process, the one allocated first faster in either order). Contents are not kept when it
// grows: every user writes what it reads first.
class Scratch {
 public:
  float* get(size_t n) {
    if (buf_.size() < n) buf_.resize(n);
    return buf_.data();
  }

 private:
  core::aligned_vector<float> buf_;
};

// The per-thread buffer of exp(score - max) of one entry's rows (rows x 64 channels).
float* exp_buffer(int rows) {
  thread_local Scratch buf;
  return buf.get(size_t(rows) * kVecs512 * 16);
}

// The tile after this one: its rows (nullptr: none) and first channel. Its lines of zt and kt
// are requested in software during this tile's max pass, one row's lines beside each row: the
// tiles of an entry are 64 channels of 8 (ratio 4) or 128 (ratio 128) rows 4 or 2 KiB apart,
// short runs in many pages that the hardware prefetchers did not follow, so every tile waited
// on its loads (perf: the cycles sat on the loads of zt and kt).
// The tiles request the next one's lines only when kt and zt together are larger than this,
// where they come from memory, as ratio 4's forward walk does (kPrefetchSteps, below). Until
// session 25 prefetch_tile_row was a function of its own whose only work was the requests, which
// GCC found pure and deleted with its calls (objdump: no prefetch in backward_entries512), so
// the tiles had run without them; always inlined now. With a tuned channel_block of 64 at
// [8192, 512] ratio 128 the requests ran 1.34x on two threads and 1.28x on one (9 of 9 rounds
// faster); in cache (the untuned path below 1 MiB per input, [2048, 64]) 0.95x.
struct NextTile {
  const RowOffsets* o = nullptr;
  int64_t e = 0, e1 = 0;
};
constexpr int64_t kPrefetchMinBytes = int64_t(16) << 20;

TREX_AVX512_FN __attribute__((always_inline)) void prefetch_tile_row(const float* kt, const float* zt, const NextTile& nx,
                                             int j) {
  if (!nx.o || j >= nx.o->n) return;
  for (int v = 0; v < kVecs512 && nx.e + 16 * v < nx.e1; ++v) {
    __builtin_prefetch(zt + nx.o->x[j] + nx.e + 16 * v);
    __builtin_prefetch(kt + nx.o->x[j] + nx.e + 16 * v);
  }
}

// Max, sum of exp and weighted key sum of channels [e, e + 64) (lanes at or past e1 masked
// off: they load 0 and are never stored); p, when given, receives each row's exps.
TREX_AVX512_FN void stats64(const float* kt, const float* zt, const float* ape,
                            const RowOffsets& o, int64_t e, int64_t e1, __m512* mx, __m512* sum,
                            __m512* acc, float* p, const NextTile& nx) {
  __mmask16 m[kVecs512];
  for (int v = 0; v < kVecs512; ++v) {
    m[v] = e + 16 * v < e1 ? simd::lanes16(e + 16 * v, e1) : __mmask16(0);
    mx[v] = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    sum[v] = acc[v] = _mm512_setzero_ps();
  }
  for (int j = 0; j < o.n; ++j) {
    prefetch_tile_row(kt, zt, nx, j);
    for (int v = 0; v < kVecs512; ++v) {
      const int64_t c = e + 16 * v;
      __m512 sc = _mm512_add_ps(simd::load16(zt + o.x[j] + c, m[v]),
                                simd::load16(ape + o.ape[j] + c, m[v]));
      mx[v] = simd::max16(mx[v], sc);
    }
  }
  for (int j = 0; j < o.n; ++j)
    for (int v = 0; v < kVecs512; ++v) {
      const int64_t c = e + 16 * v;
      __m512 sc = _mm512_add_ps(simd::load16(zt + o.x[j] + c, m[v]),
                                simd::load16(ape + o.ape[j] + c, m[v]));
      __m512 pv = simd::exp16(_mm512_sub_ps(sc, mx[v]));
      sum[v] = _mm512_add_ps(sum[v], pv);
      acc[v] = _mm512_fmadd_ps(pv, simd::load16(kt + o.x[j] + c, m[v]), acc[v]);
      if (p) _mm512_storeu_ps(p + (int64_t(j) * kVecs512 + v) * 16, pv);
    }
}

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void backward_entries512(
    const float* kt, const float* zt, const float* ape, const float* dk, float* dkt, float* dzt,
    float* dape, int64_t n, int64_t hd, int ratio, int64_t e0, int64_t e1, bool nt, bool prefetch) {
  thread_local RowOffsets bufs[2];
  RowOffsets *op = &bufs[0], *on = &bufs[1];
  if (n > 0) entry_offsets(0, ratio, hd, op);
  for (int64_t i = 0; i < n; ++i) {
    const RowOffsets& o = *op;
    if (i + 1 < n) entry_offsets(i + 1, ratio, hd, on);
    float* p = exp_buffer(o.n);
    for (int64_t e = e0; e < e1; e += 16 * kVecs512) {
      __m512 mx[kVecs512], sum[kVecs512], acc[kVecs512], kv[kVecs512], gk[kVecs512];
      __mmask16 m[kVecs512];
      NextTile nx;  // none: no requests
      if (prefetch && e + 16 * kVecs512 < e1) nx = {op, e + 16 * kVecs512, e1};
      else if (prefetch && i + 1 < n) nx = {on, e0, e1};
      stats64(kt, zt, ape, o, e, e1, mx, sum, acc, p, nx);
      for (int v = 0; v < kVecs512; ++v) {
        m[v] = e + 16 * v < e1 ? simd::lanes16(e + 16 * v, e1) : __mmask16(0);
        __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.f), sum[v]);
        kv[v] = _mm512_mul_ps(acc[v], inv);
        gk[v] = _mm512_mul_ps(simd::load16(dk + i * hd + e + 16 * v, m[v]), inv);
      }
      for (int j = 0; j < o.n; ++j)
        for (int v = 0; v < kVecs512; ++v) {
          if (m[v] == 0) continue;
          const int64_t c = e + 16 * v;
          __m512 g = _mm512_mul_ps(_mm512_loadu_ps(p + (int64_t(j) * kVecs512 + v) * 16), gk[v]);
          __m512 dz = _mm512_mul_ps(g, _mm512_sub_ps(simd::load16(kt + o.x[j] + c, m[v]), kv[v]));
          if (nt && m[v] == simd::kAll16) {  // 64-byte aligned (kv_compress_backward checks)
            _mm512_stream_ps(dkt + o.x[j] + c, g);
            _mm512_stream_ps(dzt + o.x[j] + c, dz);
          } else {
            simd::store16(dkt + o.x[j] + c, g, m[v]);
            simd::store16(dzt + o.x[j] + c, dz, m[v]);
          }
          float* da = dape + o.ape[j] + c;
          simd::store16(da, _mm512_add_ps(simd::load16(da, m[v]), dz), m[v]);
        }
    }
    std::swap(op, on);
  }
}

// The softmax statistics of channels [e0, e1) of one entry with its rows in memory order (ratio
// != 4), forward_rows512's (the backward's are rows_scores512): a max pass, then a sum pass, into
// per-channel buffers of w >= e1 - e0 rounded up to 16 (channel c at c - e0): mx the max of the
// scores, sm the sum of exp(score - max), ac the exp-weighted sum of kt. The max pass requests
// kt's lines for the sum pass, and the sum pass those of zt `next` floats on (the next entry's
// rows; next 0: none): two streams in flight per pass, where each pass had waited on one (perf,
// one thread: 59% of the samples on those two loads; 1.05-1.1x, session 20).
// Each pass walks kStatsRows rows side by side (stats_max_rows, stats_sum_rows): per vector of
// channels the group's max, or its sum and weighted sum, stay in a register over its rows, so
// the L1 buffers are read and written once per group instead of once per row. Row by row, the
// buffer's load, the mask and the store came to about as many instructions as the work itself
// (~55 per vector of zt, against a budget of ~14-24 cycles at 0.8 of the triad on 2 threads).
// The rows still run front to back (4 streams 2 KiB apart at ratio 128, which the prefetchers
// follow), and per channel the same operations in the same row order: the same bits.
constexpr int kStatsRows = 4;

// Rows j..j+G-1 of entry o in one array (base: kt, zt, dkt, dzt with o.x, ape or dape with
// o.ape), each at the pass's first channel e0.
template <int G, typename T>
TREX_AVX512_FN void group_rows(T* base, const int64_t* off, int j, int64_t e0, T** rows) {
#pragma GCC unroll 8
  for (int r = 0; r < G; ++r) rows[r] = base + off[j + r] + e0;
}

// Their rows of the backward's per-entry buffer (row j at pe + j w).
template <int G>
TREX_AVX512_FN void exp_rows(float* pe, int j, int64_t w, float** rows) {
#pragma GCC unroll 8
  for (int r = 0; r < G; ++r) rows[r] = pe + int64_t(j + r) * w;
}

// Rows r < G at one vector of channels (lanes m; kFull: all 16, plain loads): z, a, kk the
// group's first rows of zt, ape and kt at that vector, row r C floats on (ratio != 4: the entry's
// rows are consecutive tokens, its ape rows consecutive rows), mx, sm, ac the vector's buffers.
// Three bases and one stride where there had been 12 row pointers: GCC kept those in general and
// vector registers and moved them back and forth every vector (perf annotate: vmovq, reloads).
// The sum pass's exps drop exp16's upper clamp (score - max <= 0: exp16_nonpos, as the
// backward's sum pass): the same exps, the same bits (session 24).
template <int G, bool kFull>
TREX_AVX512_FN void stats_max_vector(const float* z, const float* a, const float* kk, int64_t C,
                                     __mmask16 m, float* mx) {
  __m512 v = _mm512_loadu_ps(mx);
#pragma GCC unroll 8
  for (int r = 0; r < G; ++r) {
    __builtin_prefetch(kk + r * C);  // for the sum pass
    const __m512 sc = kFull ? _mm512_add_ps(_mm512_loadu_ps(z + r * C), _mm512_loadu_ps(a + r * C))
                            : _mm512_add_ps(_mm512_maskz_loadu_ps(m, z + r * C), _mm512_maskz_loadu_ps(m, a + r * C));
    v = simd::max16(v, sc);
  }
  _mm512_storeu_ps(mx, v);
}

template <int G, bool kFull>
TREX_AVX512_FN void stats_sum_vector(const float* z, const float* a, const float* kk, int64_t C,
                                     __mmask16 m, const float* mx, float* sm, float* ac,
                                     int64_t next) {
  const __m512 mv = _mm512_loadu_ps(mx);
  __m512 s = _mm512_loadu_ps(sm), acc = _mm512_loadu_ps(ac);
#pragma GCC unroll 8
  for (int r = 0; r < G; ++r) {
    __builtin_prefetch(z + r * C + next);  // the next entry's row (next 0: this line again)
    const __m512 sc = kFull ? _mm512_add_ps(_mm512_loadu_ps(z + r * C), _mm512_loadu_ps(a + r * C))
                            : _mm512_add_ps(_mm512_maskz_loadu_ps(m, z + r * C), _mm512_maskz_loadu_ps(m, a + r * C));
    const __m512 pv = exp16_nonpos(_mm512_sub_ps(sc, mv));
    s = _mm512_add_ps(s, pv);
    acc = _mm512_fmadd_ps(pv, kFull ? _mm512_loadu_ps(kk + r * C) : _mm512_maskz_loadu_ps(m, kk + r * C), acc);
  }
  _mm512_storeu_ps(sm, s);
  _mm512_storeu_ps(ac, acc);
}

// One pass (kSum: the sum pass, else the max pass) over rows [j, j + G), channels [e0, e1).
template <int G, bool kSum>
TREX_AVX512_FN void stats_rows(const float* kt, const float* zt, const float* ape,
                               const RowOffsets& o, int j, int64_t e0, int64_t e1, float* mx,
                               float* sm, float* ac, int64_t next, int64_t C) {
  const float *z = zt + o.x[j] + e0, *a = ape + o.ape[j] + e0, *kk = kt + o.x[j] + e0;
  const int64_t len = e1 - e0;
  int64_t c = 0;
  for (; c + 16 <= len; c += 16)
    if constexpr (kSum) stats_sum_vector<G, true>(z + c, a + c, kk + c, C, simd::kAll16, mx + c, sm + c, ac + c, next);
    else stats_max_vector<G, true>(z + c, a + c, kk + c, C, simd::kAll16, mx + c);
  if (c < len) {
    const __mmask16 m = simd::lanes16(c, len);
    if constexpr (kSum) stats_sum_vector<G, false>(z + c, a + c, kk + c, C, m, mx + c, sm + c, ac + c, next);
    else stats_max_vector<G, false>(z + c, a + c, kk + c, C, m, mx + c);
  }
}

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void rows_stats512(
    const float* kt, const float* zt, const float* ape, const RowOffsets& o, int64_t e0,
    int64_t e1, float* mx, float* sm, float* ac, int64_t w, int64_t next, int64_t C) {
  for (int64_t c = 0; c < w; c += 16) {
    _mm512_storeu_ps(mx + c, _mm512_set1_ps(-std::numeric_limits<float>::infinity()));
    _mm512_storeu_ps(sm + c, _mm512_setzero_ps());
    _mm512_storeu_ps(ac + c, _mm512_setzero_ps());
  }
  int j = 0;
  for (; j + kStatsRows <= o.n; j += kStatsRows)
    stats_rows<kStatsRows, false>(kt, zt, ape, o, j, e0, e1, mx, sm, ac, next, C);
  for (; j < o.n; ++j) stats_rows<1, false>(kt, zt, ape, o, j, e0, e1, mx, sm, ac, next, C);
  for (j = 0; j + kStatsRows <= o.n; j += kStatsRows)
    stats_rows<kStatsRows, true>(kt, zt, ape, o, j, e0, e1, mx, sm, ac, next, C);
  for (; j < o.n; ++j) stats_rows<1, true>(kt, zt, ape, o, j, e0, e1, mx, sm, ac, next, C);
}

// Groups of kStatsRows rows ahead whose lines the ratio != 4 passes request into L2 (prefetcht1):
// 16 KiB of each stream at [8192, 512] (rows of 2 KiB). Requests into L1 (prefetcht0) evicted
// the lines the passes were reading (session 27: the pipelined forward from memory 1.24-1.47x
// against main into L1, 1.74-1.91x into L2).
constexpr int kAheadGroups = 2;

// The backward's softmax statistics of channels [e0, e1) of one entry (ratio != 4, rows in memory
// order): rows_stats512's max pass also stores each row's scores at pe + j w, and the sum pass
// reads the scores back from there and leaves the exps in their place.
// The sum pass then touches pe and kt only, where it read zt and ape again: with the exps, kt and
// dape, the entry's zt and ape (256 KiB each at [8192, 512]) had made the passes' data 1.25 MiB
// against a 1 MiB L2, and each pass had waited on one stream from memory (perf, one thread: the
// samples on the max pass's zt loads, the sum pass's kt loads and the gradient pass's streaming
// stores, 22%, 14% and 13%). Same scores, maxima and exps (score - max <= 0 for finite scores:
// exp16_nonpos), the same bits. Both passes walk kStatsRows rows side by side (scores_rows), as
// rows_stats512 does (session 23). From session 27 each pass requests its own stream
// kAheadGroups groups ahead into L2 (the max pass zt, the sum pass kt), where the max pass had
// requested kt into L1 for the sum pass and the gradient pass the next entry's zt, each a whole
// entry (256 KiB at [8192, 512]) ahead: with the entry's scores, kt, ape and dape those had
// passed 1.5 MiB through the 1 MiB L2. One process against main, CPU time, 21 rounds, loaded
// 11.5-11.8 (near idle not measured): [8192, 512] 1.19x and 1.21x (1 thread, 21 of 21 faster),
// 1.14x and 1.12x (2 threads, 14 and 17 of 21); the model's [2048, 128] 1.05-1.10x. The old far
// requests made prefetcht1 read 1.20x / 1.10x (15 rounds).
// Rows r < G of one group at the vector of channels c (lanes m; kFull: all 16): z, a, kk the
// rows of zt, ape and kt, p their rows of the exp buffer, each at the pass's first channel.
template <int G, bool kFull>
TREX_AVX512_FN void scores_max_vector(const float* const* z, const float* const* a,
                                      const float* const* kk, float* const* p, int64_t c,
                                      __mmask16 m, float* mx, int64_t C) {
  __m512 v = _mm512_loadu_ps(mx + c);
#pragma GCC unroll 8
  for (int r = 0; r < G; ++r) {
    __builtin_prefetch(z[r] + c + kAheadGroups * G * C, 0, 2);  // into L2 (prefetcht1)
    const __m512 sc = kFull ? _mm512_add_ps(_mm512_loadu_ps(z[r] + c), _mm512_loadu_ps(a[r] + c))
                            : _mm512_add_ps(_mm512_maskz_loadu_ps(m, z[r] + c), _mm512_maskz_loadu_ps(m, a[r] + c));
    _mm512_storeu_ps(p[r] + c, sc);
    v = simd::max16(v, sc);
  }
  _mm512_storeu_ps(mx + c, v);
}

template <int G, bool kFull>
TREX_AVX512_FN void scores_sum_vector(const float* const* kk, float* const* p, int64_t c,
                                      __mmask16 m, const float* mx, float* sm, float* ac, int64_t C) {
  const __m512 mv = _mm512_loadu_ps(mx + c);
  __m512 s = _mm512_loadu_ps(sm + c), acc = _mm512_loadu_ps(ac + c);
#pragma GCC unroll 8
  for (int r = 0; r < G; ++r) {
    __builtin_prefetch(kk[r] + c + kAheadGroups * G * C, 0, 2);  // into L2 (prefetcht1)
    const __m512 pv = exp16_nonpos(_mm512_sub_ps(_mm512_loadu_ps(p[r] + c), mv));
    s = _mm512_add_ps(s, pv);
    acc = _mm512_fmadd_ps(pv, kFull ? _mm512_loadu_ps(kk[r] + c) : _mm512_maskz_loadu_ps(m, kk[r] + c), acc);
    _mm512_storeu_ps(p[r] + c, pv);
  }
  _mm512_storeu_ps(sm + c, s);
  _mm512_storeu_ps(ac + c, acc);
}

// One pass of rows_scores512 (kSum: the sum pass, else the max pass) over rows [j, j + G).
template <int G, bool kSum>
TREX_AVX512_FN void scores_rows(const float* kt, const float* zt, const float* ape,
                                const RowOffsets& o, int j, int64_t e0, int64_t e1, float* mx,
                                float* sm, float* ac, float* pe, int64_t w, int64_t C) {
  const float *z[G], *a[G], *kk[G];
  float* p[G];
  group_rows<G>(zt, o.x, j, e0, z);
  group_rows<G>(ape, o.ape, j, e0, a);
  group_rows<G>(kt, o.x, j, e0, kk);
  exp_rows<G>(pe, j, w, p);
  const int64_t len = e1 - e0;
  int64_t c = 0;
  for (; c + 16 <= len; c += 16)
    if constexpr (kSum) scores_sum_vector<G, true>(kk, p, c, simd::kAll16, mx, sm, ac, C);
    else scores_max_vector<G, true>(z, a, kk, p, c, simd::kAll16, mx, C);
  if (c < len) {
    if constexpr (kSum) scores_sum_vector<G, false>(kk, p, c, simd::lanes16(c, len), mx, sm, ac, C);
    else scores_max_vector<G, false>(z, a, kk, p, c, simd::lanes16(c, len), mx, C);
  }
}

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void rows_scores512(
    const float* kt, const float* zt, const float* ape, const RowOffsets& o, int64_t e0,
    int64_t e1, float* mx, float* sm, float* ac, float* pe, int64_t w, int64_t C) {
  for (int64_t c = 0; c < w; c += 16) {
    _mm512_storeu_ps(mx + c, _mm512_set1_ps(-std::numeric_limits<float>::infinity()));
    _mm512_storeu_ps(sm + c, _mm512_setzero_ps());
    _mm512_storeu_ps(ac + c, _mm512_setzero_ps());
  }
  int j = 0;
  for (; j + kStatsRows <= o.n; j += kStatsRows)
    scores_rows<kStatsRows, false>(kt, zt, ape, o, j, e0, e1, mx, sm, ac, pe, w, C);
  for (; j < o.n; ++j) scores_rows<1, false>(kt, zt, ape, o, j, e0, e1, mx, sm, ac, pe, w, C);
  for (j = 0; j + kStatsRows <= o.n; j += kStatsRows)
    scores_rows<kStatsRows, true>(kt, zt, ape, o, j, e0, e1, mx, sm, ac, pe, w, C);
  for (; j < o.n; ++j) scores_rows<1, true>(kt, zt, ape, o, j, e0, e1, mx, sm, ac, pe, w, C);
}

// Entries taken one at a time, in entry order, by whichever thread asks (the multi-thread
// backward for ratio != 4).
class EntryClaims {
 public:
  int64_t take() { return next_.fetch_add(1, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> next_{0};
};

// The order in which entries add their dzt to dape when several threads run entries at once
// (taken in entry order, one at a time): dape sums over entries in entry order, as on one
// thread. Each dape row receives one row of each entry, so the order only binds row by row:
// entry i may add its row r once every earlier entry and its own rows before r are in. The
// progress counter says how far that is (entry i, rows [0, r): i rows + r). An entry whose turn
// has come adds its dzt in its gradient pass (turn_at), row group by row group; rows computed
// before its turn came keep their dzt in the L2 buffer and are added as soon as it has (at the
// next group, or at the end, finish). One that finishes before its turn waits for it a little
// (the entry before is usually finishing on the other thread), and after that marks itself
// spilled: its dzt, already in memory, are added from there by whichever thread brings the
// turn to it. No thread waits for another that the scheduler has stopped, which a plain wait did
// on this loaded machine (3 threads on 2 cores ran 0.64x).
// Until session 27 the turn went by whole entries: entry i added nothing before entry i - 1 had
// finished, so the two threads ran their entries side by side and each kept every dzt, waited
// for its turn (perf, two threads at [8192, 512]: 8% of the samples spinning) and added them in
// a pass of its own, whose dape lines came from the other core's L2 (15%).
std::atomic<bool> g_spill_every_entry{false};  // kv_compress_backward_spill_for_test

class DapeTurns {
 public:
  DapeTurns(int64_t n, int rows) : rows_(rows), spilled_(size_t(n), 0) {}
  // Every entry before i, and rows [0, added) of entry i, are in dape.
  bool reached(int64_t i, int added) const {
    return progress_.load(std::memory_order_acquire) == i * rows_ + added;
  }
  // Before entry i's rows from j on: true when they may be added now (its turn has come); then
  // rows [*added, j), kept so far, are added first (add_kept(r0, r1)) and *added becomes j.
  template <typename AddKept>
  bool turn_at(int64_t i, int j, int* added, AddKept add_kept) {
    if (g_spill_every_entry.load(std::memory_order_relaxed) || !reached(i, *added)) return false;
    if (*added < j) add_kept(*added, j);
    *added = j;
    return true;
  }
  // Entry i's rows [0, added) are in dape (their turn came in turn_at's order).
  void added_rows(int64_t i, int added) { progress_.store(i * rows_ + added, std::memory_order_release); }
  // Entry i's dzt are ready (rows [0, added) in dape, the rest in its buffer; in memory already,
  // fenced): adds the rest now if it is i's turn, then every spilled entry that follows;
  // otherwise (added is 0: no other thread moves the progress through i's rows) marks i spilled.
  template <typename AddKept, typename AddSpilled>
  void finish(int64_t i, int added, AddKept add_kept, AddSpilled add_spilled) {
    while (lock_.test_and_set(std::memory_order_acquire)) _mm_pause();
    const int64_t p0 = progress_.load(std::memory_order_relaxed);
    int64_t p = p0;
    if (added == rows_) {
      // In dape already; its last group's progress may have let entry i + 1 start adding.
    } else if (p == i * rows_ + added && !g_spill_every_entry.load(std::memory_order_relaxed)) {
      add_kept(added, rows_);
      p = (i + 1) * rows_;
    } else {
      spilled_[size_t(i)] = 1;
    }
    // p at an entry's start: no thread adds rows of that entry now (it runs no gradient pass).
    for (; p % rows_ == 0 && p / rows_ < int64_t(spilled_.size()) && spilled_[size_t(p / rows_)]; p += rows_)
      add_spilled(p / rows_);
    if (p != p0) progress_.store(p, std::memory_order_release);
    lock_.clear(std::memory_order_release);
  }

 private:
  const int rows_;
  std::atomic_flag lock_ = ATOMIC_FLAG_INIT;
  alignas(64) std::atomic<int64_t> progress_{0};  // its own line: the threads read it often
  std::vector<char> spilled_;  // guarded by lock_
};

// The rows between two looks at the turn (a multiple of kStatsRows): about 64 KiB of dzt (32 rows
// at [8192, 512], a whole entry at the model's [2048, 128]), where each look and each published
// progress moves the counter's line between the cores. Session 27, against 16 KiB: 0.99x at
// [8192, 512], 1.05x at [2048, 128] (two threads, loaded, within the noise of the small shape).
constexpr int64_t kTurnStepBytes = 65536;
inline int turn_step_rows(int64_t channels) {
  const int64_t rows = kTurnStepBytes / (int64_t(sizeof(float)) * channels);
  return int(std::max<int64_t>(1, (rows + kStatsRows - 1) / kStatsRows)) * kStatsRows;
}

// About 2^12 pauses (~0.1-0.2 ms, a few entries' time): the entry before is then likely on a
// thread that is not running.
inline void wait_turn_briefly(const DapeTurns& turns, int64_t i, int added) {
  for (int spins = 0; spins < (1 << 12) && !turns.reached(i, added); ++spins) _mm_pause();
}

// dape row by row += the dzt rows [r0, r1) at dz (row j at dz + j * stride), channels [e0, e1).
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void add_rows512(
    const float* dz, int64_t stride, const RowOffsets& o, float* dape, int64_t e0, int64_t e1, int r0, int r1) {
  for (int j = r0; j < r1; ++j) {
    const float* z = dz + int64_t(j) * stride;
    float* da = dape + o.ape[j];
    for (int64_t c = e0; c < e1; c += 16) {
      const __mmask16 m = simd::lanes16(c, e1);
      simd::store16(da + c, _mm512_add_ps(simd::load16(da + c, m), simd::load16(z + (c - e0), m)), m);
    }
  }
}

// The gradient pass at the vector of channels c of rows r < G (kFull: all 16 lanes): row r's
// exps at p[r] (dzt left there when `keep`, else added to its ape row), kt, dkt, dzt, dape rows
// at x[r], d[r] (at the pass's first channel).
template <int G, bool kFull>
TREX_AVX512_FN void gradient_vector(const float* const* kk, float* const* dkr, float* const* dzr,
                                    float* const* da, float* const* p, int64_t c, __mmask16 m,
                                    const float* kv, const float* gk, bool nt, bool keep) {
  const __m512 gkv = _mm512_loadu_ps(gk + c), kvv = _mm512_loadu_ps(kv + c);
#pragma GCC unroll 8
  for (int r = 0; r < G; ++r) {
    const __m512 g = _mm512_mul_ps(_mm512_loadu_ps(p[r] + c), gkv);
    const __m512 dz = _mm512_mul_ps(g, _mm512_sub_ps(kFull ? _mm512_loadu_ps(kk[r] + c) : _mm512_maskz_loadu_ps(m, kk[r] + c), kvv));
    if (kFull && nt) {  // 64-byte aligned (kv_compress_backward checks)
      _mm512_stream_ps(dkr[r] + c, g);
      _mm512_stream_ps(dzr[r] + c, dz);
    } else {
      simd::store16(dkr[r] + c, g, m);
      simd::store16(dzr[r] + c, dz, m);
    }
    if (keep) {
      _mm512_storeu_ps(p[r] + c, dz);
    } else {
      simd::store16(da[r] + c, _mm512_add_ps(simd::load16(da[r] + c, m), dz), m);
    }
  }
}

// backward_rows512's gradient pass over rows [j, j + G), channels [e0, e1).
template <int G>
TREX_AVX512_FN void gradient_rows(const float* kt, float* dkt, float* dzt, float* dape,
                                  const RowOffsets& o, int j, int64_t e0, int64_t e1,
                                  const float* kv, const float* gk, float* pe, int64_t w, bool nt,
                                  bool keep) {
  const float* kk[G];
  float *dkr[G], *dzr[G], *da[G], *p[G];
  group_rows<G>(kt, o.x, j, e0, kk);
  group_rows<G>(dkt, o.x, j, e0, dkr);
  group_rows<G>(dzt, o.x, j, e0, dzr);
  group_rows<G>(dape, o.ape, j, e0, da);
  exp_rows<G>(pe, j, w, p);
  const int64_t len = e1 - e0;
  int64_t c = 0;
  for (; c + 16 <= len; c += 16) gradient_vector<G, true>(kk, dkr, dzr, da, p, c, simd::kAll16, kv, gk, nt, keep);
  if (c < len) gradient_vector<G, false>(kk, dkr, dzr, da, p, c, simd::lanes16(c, len), kv, gk, nt, keep);
}

// The gradient pass from the forward's statistics (kv_compress_backward_from_stats): one pass
// that reads each row's zt and ape again and takes its exp there, where the backward without
// them made a max pass (zt, ape), a sum pass (kt, the scores kept) and this pass (the exps, kt):
// zt and kt come from memory once each, dkt and dzt go to it once, and nothing else leaves L2.
// z, a, kk, dkr, dzr, da: row j's zt, ape, kt, dkt, dzt and dape at the pass's first channel,
// row j + r C floats on (ratio != 4: consecutive tokens and ape rows). Each row's zt and kt
// `ahead` floats on are requested into L2 (prefetcht1; backward_stats_rows512 picks the rows).
// Per channel the operations of the three passes in their order (the score z + a, exp of score
// - max, times dk / sum, times kt - k): the same bits.
template <int G, bool kFull>
TREX_AVX512_FN void gradient_stats_vector(const float* z, const float* a, const float* kk,
                                          float* dkr, float* dzr, float* da, int64_t C, int64_t c,
                                          __mmask16 m, const float* mx, const float* kv,
                                          const float* gk, bool nt, int64_t ahead) {
  const __m512 mv = _mm512_loadu_ps(mx + c), gkv = _mm512_loadu_ps(gk + c), kvv = _mm512_loadu_ps(kv + c);
#pragma GCC unroll 8
  for (int r = 0; r < G; ++r) {
    const int64_t o = r * C + c;
    __builtin_prefetch(z + o + ahead, 0, 2);  // into L2 (prefetcht1)
    __builtin_prefetch(kk + o + ahead, 0, 2);
    const __m512 sc = kFull ? _mm512_add_ps(_mm512_loadu_ps(z + o), _mm512_loadu_ps(a + o))
                            : _mm512_add_ps(_mm512_maskz_loadu_ps(m, z + o), _mm512_maskz_loadu_ps(m, a + o));
    const __m512 g = _mm512_mul_ps(exp16_nonpos(_mm512_sub_ps(sc, mv)), gkv);
    const __m512 dz = _mm512_mul_ps(g, _mm512_sub_ps(kFull ? _mm512_loadu_ps(kk + o) : _mm512_maskz_loadu_ps(m, kk + o), kvv));
    if (kFull && nt) {  // 64-byte aligned (kv_compress_backward checks)
      _mm512_stream_ps(dkr + o, g);
      _mm512_stream_ps(dzr + o, dz);
    } else {
      simd::store16(dkr + o, g, m);
      simd::store16(dzr + o, dz, m);
    }
    simd::store16(da + o, _mm512_add_ps(simd::load16(da + o, m), dz), m);
  }
}

// gradient_stats_vector over rows [j, j + G) of the entry whose first row is token t0 (ratio !=
// 4: row j is token t0 + j, ape row j), every channel.
template <int G>
TREX_AVX512_FN void gradient_stats_rows(const float* kt, const float* zt, const float* ape,
                                        float* dkt, float* dzt, float* dape, int64_t t0, int j,
                                        int64_t C, const float* mx, const float* kv,
                                        const float* gk, bool nt, int64_t ahead) {
  const int64_t x = (t0 + j) * C, xa = int64_t(j) * C;
  const float *z = zt + x, *a = ape + xa, *kk = kt + x;
  float *dkr = dkt + x, *dzr = dzt + x, *da = dape + xa;
  int64_t c = 0;
  for (; c + 16 <= C; c += 16)
    gradient_stats_vector<G, true>(z, a, kk, dkr, dzr, da, C, c, simd::kAll16, mx, kv, gk, nt, ahead);
  if (c < C)
    gradient_stats_vector<G, false>(z, a, kk, dkr, dzr, da, C, c, simd::lanes16(c, C), mx, kv, gk, nt, ahead);
}

// The backward from the forward's statistics (ratio != 4 on AVX-512, kt and zt of 1 MiB and
// more): rows [j0, j1) of every entry, entries in order, one pass each (gradient_stats_rows).
// Each thread takes one range of rows: dape row j receives only row j of each entry, so a
// thread's dape rows are its own and it sums them in entry order, as one thread does: the same
// bits, with no turns between the threads. (The split by entries with DapeTurns, the backward's
// without statistics, spent ~25% of two threads' samples on the turns once the max and sum
// passes were gone: spinning for the turn, dzt kept and added later, dape lines moving between
// the cores. By channels, each thread half of every row, it ran 0.29x: two threads streaming
// alternate KiBs of the same rows.) A range of rows of one entry is one contiguous run (at
// [8192, 512] on two threads, 64 rows: 128 KiB of kt and of zt); the requests ahead
// (kAheadGroups groups) cross from the range's end to the same range of the next entry.
// Rows a step of the pass walks side by side: one, each stream (zt, kt, dkt, dzt, dape) read or
// written front to back a row at a time, the requests kAheadGroups rows on (4 KiB at [8192,
// 512]), where four rows 2 KiB apart made each stream four runs at once (as kPairRows, the
// forward's). kernel_triad_bench --paired 5 kv_compress.bwd, 8 runs a side alternating (nice -20
// lane, loaded 9.7-10.7, session 29): [8192, 512] ratio 128 median 1.512 -> 1.154 ms (1.31x,
// faster in 8 of 8 pairs; the unchanged ratio-4 row 1.03x). One process it read 1.10-1.21x with
// this source as the renamed object and 0.97-0.99x as the library (the object side ran 5-10%
// faster either way: bench/results/kv_s29). The same operations per channel: the same bits.
constexpr int kGradientRows = 1;

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void backward_stats_rows512(
    const float* kt, const float* zt, const float* ape, const float* stats, const float* dk,
    float* dkt, float* dzt, float* dape, int64_t n, int64_t hd, int ratio, int j0, int j1, bool nt) {
  thread_local Scratch buf;
  const int64_t w = (hd + 15) / 16 * 16, C = hd;  // ratio != 4: C = hd
  float *mx = buf.get(size_t(3 * w)), *kv = mx + w, *gk = kv + w;
  const int ahead = kAheadGroups * kGradientRows, span = j1 - j0;
  for (int64_t i = 0; i < n; ++i) {
    // The per-channel max, k = weighted sum / sum and dk / sum: backward_rows512's operations.
    const float* st = stats + i * 3 * hd;
    for (int64_t c = 0; c < hd; c += 16) {
      const __mmask16 m = simd::lanes16(c, hd);
      const __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.f), _mm512_maskz_loadu_ps(m, st + hd + c));
      _mm512_storeu_ps(mx + c, _mm512_maskz_loadu_ps(m, st + c));
      _mm512_storeu_ps(kv + c, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, st + 2 * hd + c), inv));
      _mm512_storeu_ps(gk + c, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, dk + i * hd + c), inv));
    }
    const int64_t t0 = i * ratio;
    // Rows ahead within the range, else the next entry's rows of the range (none after the last).
    auto ahead_of = [&](int j) -> int64_t {
      if (j + ahead < j1) return int64_t(ahead) * C;
      return i + 1 < n ? int64_t(ahead - span + ratio) * C : 0;
    };
    int j = j0;
    for (; j + kGradientRows <= j1; j += kGradientRows)
      gradient_stats_rows<kGradientRows>(kt, zt, ape, dkt, dzt, dape, t0, j, C, mx, kv, gk, nt, ahead_of(j));
    for (; j < j1; ++j) gradient_stats_rows<1>(kt, zt, ape, dkt, dzt, dape, t0, j, C, mx, kv, gk, nt, ahead_of(j));
  }
}

// backward_entries512 for ratio != 4 with the rows in memory order (forward_rows512's walk):
// channels [e0, e1) of entries [i0, i1), a max pass and a sum pass row by row (each exp kept, the
// entry's exps stay in L2: 128 rows x 512 channels are 256 KiB), the per-channel 1/sum, k and
// dk/sum, then a gradient pass row by row. The 64-channel tiles read 256 bytes of each of 128
// rows 2 KiB apart, which the hardware prefetchers did not follow. Same operations per channel
// in the same row order as backward_entries512: the same bits.
// turns == nullptr: the gradient pass adds each dzt to dape (entries in order on one thread).
// Otherwise entries run on several threads at once: the gradient pass keeps each row's dzt in
// place of its exp (read just before), and DapeTurns adds them in entry order.
// The gradient pass too walks kStatsRows rows side by side (gradient_rows: 1/sum x dk and k
// loaded once per group; session 23, one thread 1.16x, two 1.09x).
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void backward_rows512(
    const float* kt, const float* zt, const float* ape, const float* dk, float* dkt, float* dzt,
    float* dape, int64_t i0, int64_t i1, int64_t hd, int ratio, int64_t e0, int64_t e1, bool nt,
    DapeTurns* turns, EntryClaims* claims) {
  thread_local RowOffsets o;
  thread_local Scratch buf;
  const int64_t w = (e1 - e0 + 15) / 16 * 16;
  const int rows = ratio;  // ratio != 4: every entry has ratio rows
  float *mx = buf.get(size_t((5 + rows) * w)), *sm = mx + w, *ac = sm + w, *kv = ac + w, *gk = kv + w, *pe = gk + w;
  const int step = turn_step_rows(e1 - e0);
  for (int64_t i = claims ? claims->take() : i0, next = 0; i < i1; i = next) {
    entry_offsets(i, ratio, hd, &o);
    rows_scores512(kt, zt, ape, o, e0, e1, mx, sm, ac, pe, w, compressor_width(ratio, hd));
    for (int64_t c = e0; c < e1; c += 16) {
      const __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.f), _mm512_loadu_ps(sm + (c - e0)));
      _mm512_storeu_ps(kv + (c - e0), _mm512_mul_ps(_mm512_loadu_ps(ac + (c - e0)), inv));
      _mm512_storeu_ps(gk + (c - e0), _mm512_mul_ps(simd::load16(dk + i * hd + c, simd::lanes16(c, e1)), inv));
    }
    // The entry this thread takes next, claimed before the gradient pass (until session 27 the
    // pass requested that entry's zt a whole entry ahead; the max pass now requests its own
    // lines 2 groups ahead, rows_scores512).
    next = claims ? claims->take() : i + 1;
    // With turns: rows [0, added) are in dape, rows [added, j) keep their dzt in pe; the turn is
    // taken and the progress published every `step` rows.
    int added = 0;
    bool now = turns == nullptr;  // this step's dzt go to dape
    auto add_kept = [&](int r0, int r1) { add_rows512(pe, w, o, dape, e0, e1, r0, r1); };
    auto turn_step = [&](int j) {
      if (!turns) return;
      if (now) turns->added_rows(i, added = j);
      now = j < o.n && turns->turn_at(i, j, &added, add_kept);
    };
    int j = 0;
    for (; j + kStatsRows <= o.n; j += kStatsRows) {
      if (j % step == 0) turn_step(j);
      gradient_rows<kStatsRows>(kt, dkt, dzt, dape, o, j, e0, e1, kv, gk, pe, w, nt, !now);
    }
    for (; j < o.n; ++j) {
      if (j % step == 0) turn_step(j);
      gradient_rows<1>(kt, dkt, dzt, dape, o, j, e0, e1, kv, gk, pe, w, nt, !now);
    }
    turn_step(o.n);
    if (!turns) continue;
    simd::fence_streams(nt);  // a spilled entry's dzt are read by another thread
    if (added < o.n) wait_turn_briefly(*turns, i, added);
    const int64_t C = compressor_width(ratio, hd);
    turns->finish(i, added, add_kept, [&](int64_t d) {
      RowOffsets od;
      entry_offsets(d, ratio, hd, &od);
      add_rows512(dzt + od.x[0] + e0, C, od, dape, e0, e1, 0, od.n);
    });
  }
}

// Channels [e0, e1) of entry i with the rows in memory order (ratio != 4: the entry's rows are
// consecutive tokens, one contiguous run of ratio x C floats): a max pass, then a sum pass, each
// over groups of rows front to back (rows_stats512), the per-channel max, sum and weighted sum in
// a per-thread buffer (L1) between groups. Each pass then reads whole rows front to back, which the hardware prefetchers
// follow; stats64's 64-channel tiles read 256 bytes of each of 128 rows 2 KiB apart, short runs
// they did not (perf: the cycles sat on those loads; one thread ran at ~10 GB/s). Per channel
// the same operations in the same row order as stats64, so the same bits. (Ratio 4's eight rows
// lie 4 KiB apart in two half-rows; this order made it 2x slower there: not used for it.)
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void forward_rows512(
    const float* kt, const float* zt, const float* ape, float* k, int64_t i, int64_t e0,
    int64_t e1, const RowOffsets& o, int64_t hd, int64_t next, float* stats) {
  thread_local Scratch buf;
  const int64_t w = (e1 - e0 + 15) / 16 * 16;
  float *mx = buf.get(size_t(3 * w)), *sm = mx + w, *ac = sm + w;  // channel c at c - e0
  rows_stats512(kt, zt, ape, o, e0, e1, mx, sm, ac, w, next, hd);  // ratio != 4: rows hd apart
  store_stats512(stats ? stats + i * 3 * hd : nullptr, hd, e0, e1, mx, sm, ac);
  for (int64_t c = e0; c < e1; c += 16)
    simd::store16(k + i * hd + c, _mm512_div_ps(_mm512_loadu_ps(ac + (c - e0)), _mm512_loadu_ps(sm + (c - e0))),
                  simd::lanes16(c, e1));
}

// Work items [w0, w1) of the forward for ratio != 4 on AVX-512: the consecutive items of one
// entry (its channel blocks) as one channel range, rows in memory order (forward_rows512).
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void forward_rows_items512(
    const float* kt, const float* zt, const float* ape, float* k, int64_t w0, int64_t w1,
    int64_t blocks, int64_t cb, int64_t hd, int ratio, float* stats) {
  thread_local RowOffsets o;
  for (int64_t w = w0; w < w1;) {
    const int64_t i = w / blocks, wl = std::min(w1, (i + 1) * blocks);  // this entry's items
    entry_offsets(i, ratio, hd, &o);
    forward_rows512(kt, zt, ape, k, i, (w % blocks) * cb, std::min(hd, ((wl - 1) % blocks + 1) * cb), o, hd,
                    wl < w1 ? int64_t(ratio) * compressor_width(ratio, hd) : 0, stats);
    w = wl;
  }
}

// The forward for ratio != 4 on AVX-512 (forward_pipelined512): entries claimed one at a time,
// two in flight per thread. The sum pass of entry u runs beside the max pass of the entry v the
// thread takes next, group of rows by group of rows. Alone, the max pass computed 2 additions
// and a max per vector and waited on zt from memory while the sum pass computed ~17 vector
// operations per vector (its exp) on lines requested a pass earlier (perf, one thread, [8192,
// 512]: ~30% of the samples on the max pass's zt loads, ~39% on the sum pass's kt loads); side by
// side, v's zt arrives while u's exps compute. Row j of u and of v takes ape row j: one load
// serves both passes (in cache, the model's [2048, 128]: 1.2x with no requests at all).
// From memory (kAhead: kt and zt over kPrefetchMinBytes together) the step requests u's kt and
// v's zt kAheadGroups groups of rows on (the entries are contiguous runs of rows; a group is one
// row from memory since session 29, kPairRows: 4 KiB at [8192, 512]) into L2: requests into L1 ran 1.24-1.47x against main where into L2 1.74-1.91x (one process, CPU
// time, 1 and 2 threads, loaded 9-12, session 27; near idle not measured): requests into L1
// evicted the lines the step was reading. The same requests into L2 in main's two passes alone
// gave 1.16-1.21x. Per channel the same operations in the same row order as rows_stats512: the
// same bits.
template <int G, bool kFull, bool kAhead>
TREX_AVX512_FN void stats_sum_max_vector(const float* z, const float* a, const float* kk, int64_t C,
                                         int64_t delta, __mmask16 m, const float* mx, float* sm,
                                         float* ac, float* mx2) {
  const __m512 mv = _mm512_loadu_ps(mx);
  __m512 s = _mm512_loadu_ps(sm), acc = _mm512_loadu_ps(ac), v2 = _mm512_loadu_ps(mx2);
#pragma GCC unroll 8
  for (int r = 0; r < G; ++r) {
    if constexpr (kAhead) {  // locality 2: prefetcht1, into L2
      __builtin_prefetch(kk + (G * kAheadGroups + r) * C, 0, 2);
      __builtin_prefetch(z + delta + (G * kAheadGroups + r) * C, 0, 2);
    }
    const __m512 av = kFull ? _mm512_loadu_ps(a + r * C) : _mm512_maskz_loadu_ps(m, a + r * C);
    const __m512 z2 = kFull ? _mm512_loadu_ps(z + delta + r * C) : _mm512_maskz_loadu_ps(m, z + delta + r * C);
    v2 = simd::max16(v2, _mm512_add_ps(z2, av));
    const __m512 z1 = kFull ? _mm512_loadu_ps(z + r * C) : _mm512_maskz_loadu_ps(m, z + r * C);
    const __m512 pv = exp16_nonpos(_mm512_sub_ps(_mm512_add_ps(z1, av), mv));
    s = _mm512_add_ps(s, pv);
    acc = _mm512_fmadd_ps(pv, kFull ? _mm512_loadu_ps(kk + r * C) : _mm512_maskz_loadu_ps(m, kk + r * C), acc);
  }
  _mm512_storeu_ps(sm, s);
  _mm512_storeu_ps(ac, acc);
  _mm512_storeu_ps(mx2, v2);
}

// Rows [j, j + G) of entry u (offsets o) beside the same rows of entry v, delta floats on in kt
// and zt; every channel of the head (C = hd).
template <int G, bool kAhead>
TREX_AVX512_FN void stats_sum_max_rows(const float* kt, const float* zt, const float* ape,
                                       const RowOffsets& o, int j, int64_t delta, const float* mx,
                                       float* sm, float* ac, float* mx2, int64_t C) {
  const float *z = zt + o.x[j], *a = ape + o.ape[j], *kk = kt + o.x[j];
  int64_t c = 0;
  for (; c + 16 <= C; c += 16)
    stats_sum_max_vector<G, true, kAhead>(z + c, a + c, kk + c, C, delta, simd::kAll16, mx + c, sm + c, ac + c, mx2 + c);
  if (c < C)
    stats_sum_max_vector<G, false, kAhead>(z + c, a + c, kk + c, C, delta, simd::lanes16(c, C), mx + c, sm + c, ac + c, mx2 + c);
}

// Rows a pair step walks side by side: from memory one (each of u's zt and kt and v's zt read
// front to back a row at a time, the requests kAheadGroups rows on: 4 KiB), in cache
// kStatsRows. With four rows 2 KiB apart each of the three streams was four runs of lines at
// once, a vector of each per step: at [8192, 512] ratio 128 one row a step ran 1.20-1.22x on one
// thread (CPU time, 20-21 of 21 rounds faster) and 1.11-1.20x on two (wall), against the 1.06x /
// 0.94x of requests one row on and 1.21x / 1.08x eight rows on (one process, alternating, nice
// -20 lane, loaded 10-11; session 29, bench/results/kv_s29). It loads and stores the per-channel
// sums once per row instead of once per four (about 6 more instructions per vector of channels),
// which in cache, where the exps bound the step, the four rows save. The same operations per
// channel in the same row order: the same bits.
template <bool kAhead>
inline constexpr int kPairRows = kAhead ? 1 : kStatsRows;

template <bool kAhead>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void forward_pipelined512(
    const float* kt, const float* zt, const float* ape, float* k, int64_t n, int64_t hd, int ratio,
    EntryClaims& claims, float* stats) {
  thread_local RowOffsets o;
  thread_local Scratch buf;
  const int64_t w = (hd + 15) / 16 * 16;
  float *mx = buf.get(size_t(4 * w)), *sm = mx + w, *ac = sm + w, *mx2 = ac + w;  // u's max, sum, weighted sum; v's max
  const __m512 ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t u = claims.take();
  if (u >= n) return;
  entry_offsets(u, ratio, hd, &o);
  for (int64_t c = 0; c < w; c += 16) _mm512_storeu_ps(mx + c, ninf);
  int j = 0;
  for (; j + kStatsRows <= o.n; j += kStatsRows) stats_rows<kStatsRows, false>(kt, zt, ape, o, j, 0, hd, mx, sm, ac, 0, hd);
  for (; j < o.n; ++j) stats_rows<1, false>(kt, zt, ape, o, j, 0, hd, mx, sm, ac, 0, hd);
  for (;;) {
    const int64_t v = claims.take();
    for (int64_t c = 0; c < w; c += 16) {
      _mm512_storeu_ps(sm + c, _mm512_setzero_ps());
      _mm512_storeu_ps(ac + c, _mm512_setzero_ps());
      _mm512_storeu_ps(mx2 + c, ninf);
    }
    if (v < n) {  // ratio != 4: every entry ratio rows, v's row j (v - u) ratio hd floats on
      const int64_t delta = (v - u) * int64_t(ratio) * hd;
      for (j = 0; j + kPairRows<kAhead> <= o.n; j += kPairRows<kAhead>)
        stats_sum_max_rows<kPairRows<kAhead>, kAhead>(kt, zt, ape, o, j, delta, mx, sm, ac, mx2, hd);
      for (; j < o.n; ++j) stats_sum_max_rows<1, kAhead>(kt, zt, ape, o, j, delta, mx, sm, ac, mx2, hd);
    } else {  // the thread's last entry: its sum pass alone
      for (j = 0; j + kStatsRows <= o.n; j += kStatsRows) stats_rows<kStatsRows, true>(kt, zt, ape, o, j, 0, hd, mx, sm, ac, 0, hd);
      for (; j < o.n; ++j) stats_rows<1, true>(kt, zt, ape, o, j, 0, hd, mx, sm, ac, 0, hd);
    }
    for (int64_t c = 0; c < hd; c += 16)
      simd::store16(k + u * hd + c, _mm512_div_ps(_mm512_loadu_ps(ac + c), _mm512_loadu_ps(sm + c)), simd::lanes16(c, hd));
    store_stats512(stats ? stats + u * 3 * hd : nullptr, hd, 0, hd, mx, sm, ac);
    if (v >= n) return;
    u = v;
    entry_offsets(u, ratio, hd, &o);
    std::swap(mx, mx2);
  }
}

// ---- AVX-512, ratio 4: 32 channels of an entry's rows in registers ---------------------------
//
// Ratio 4's entry i pools 8 half rows: tokens 4(i-1)..4i-1 at channel offset 0 and tokens
// 4i..4i+3 at offset hd (entry 0: the latter 4 only), runs of hd floats C floats apart. A step
// takes 32 channels of all rows: the 16 scores stay in registers from the max to the exps (stats64
// loads zt and ape twice), the exps drop exp16's upper clamp (score - max <= 0), and, when kt and
// zt are larger than the cache (kPrefetchMinBytes), the lines of the step kPrefetchSteps ahead
// in the walk are requested (the walk crosses channel blocks and entries; at its start the first
// steps' lines are requested at once). Per channel the same operations in the same row order as
// stats64 and the backward's gradient pass: the same bits.
// The backward (backward_r4_512) differs since session 19: a step is one 16-channel vector of
// all rows at a time (32 channels kept too many values live: GCC spilled them every step); since
// session 24 it has a walk of its own (r4_backward_walk512: rows from two offsets, ape and dape
// packed). From memory it requests the lines ahead as the forward does (since session 30, below).

constexpr int kR4Step = 32;        // channels per step: 2 vectors x 8 rows of scores
constexpr int kPrefetchSteps = 4;  // steps ahead whose lines are requested (4 KiB each)
// The forward requests lines ahead only when kt and zt together are larger than this (the
// bytes of both inputs), where they come from memory: there the requests ran 1.3-1.8x (one
// process, 9 alternating rounds, quiet lane, loaded 10-13: [12288, 128] and [16384, 128] on 1
// and 2 threads, [4096, 512] 1.14-1.20x on 2); with the inputs in cache (16 MiB and less
// here: [1024, 128], the model's [2048, 128], [8192, 128], [2048, 512]) the 32 requests a step
// were only work, 0.81-0.96x. Distances of 2, 4, 6 and 8 steps measured alike from memory.
// Until session 25 the requests were a function of their own with no other effect, which GCC
// found pure and dropped with its calls (objdump: no prefetch instruction in either walk), so
// the walks had run without them. The backward made none until session 30: session 25's
// requests (into L1 then, prefetcht0) ran 0.89-0.90x at [2048, 128] and 0.95-1.10x at [4096,
// 512] and [16384, 128] on 2 threads. Into L2 (r4_prefetch_row) and from memory only (the rule
// above), 4 steps ahead: one process against the session start's source, wall, 15-21 alternating
// rounds, quiet lane, loaded 6-11 (near idle not measured), bits the same: [4096, 512] 1.10x on 2
// threads (15 of 15 faster; the new code as the library 1.095x, 14 of 15; same-code control
// 1.035x / 0.999x) and 1.17-1.19x on 1; [16384, 128] 1.90x, [3001, 520] 1.19x, [9000, 129]
// 1.38x, [8192, 1000] 1.19x (2 threads); 2 steps ahead 1.01x / 1.07x, 8 1.11x / 1.18x. The
// model's [2048, 128] (in cache) makes none, unchanged. Near idle (the session's end A/B, whole
// kernel_triad_bench runs alternating with the session start's build, load 0.2-5): [4096, 512]
// 1.175x (--paired 5, 3 runs a side: 86% -> 101% of 51.6 GB/s) and 1.149x (the full table, 2 a
// side), so these requests hold without other processes on the memory bus too.

// The kt/zt and ape offsets of entry i's rows j0..7 (j0 = 4 for entry 0).
struct R4Rows {
  int j0;
  int64_t x[8], a[8];
};

inline void r4_rows(int64_t i, int64_t hd, R4Rows* r) {
  const int64_t C = 2 * hd;
  r->j0 = i > 0 ? 0 : 4;
  for (int j = 0; j < 8; ++j) {
    const int64_t token = j < 4 ? 4 * (i - 1) + j : 4 * i + j - 4;
    r->x[j] = token * C + (j < 4 ? 0 : hd);
    r->a[j] = (j & 3) * C + (j < 4 ? 0 : hd);
  }
}

// The walk of one job: channels [e0, e1) of entries [i0, i1), each entry's channels in steps of
// 32 before the next entry's (the forward's items in order: consecutive channel blocks of one
// entry join into one range).
struct R4Walk {
  int64_t i0, i1, e0, e1;
  int64_t steps_per_entry() const { return (e1 - e0 + kR4Step - 1) / kR4Step; }
  int64_t steps() const { return (i1 - i0) * steps_per_entry(); }
};

// The step of the walk whose lines are requested next: entry i, first channel c (i == w.i1: past
// the walk's end), moved one step at a time.
struct R4Ahead {
  int64_t i, c;
};

// The requests of one row of a step: its line of zt and kt at offset o, and the next line of
// each when `two`. Always inlined, as is r4_prefetch_next: as functions of their own they have
// no effect GCC counts (a prefetch is none), so GCC found them pure and deleted their calls.
// Into L2 (locality 2: prefetcht1) since session 27: into L1 the 16 streams' requests (8 rows of
// zt and kt) evicted the lines the steps were reading. One process against main, CPU time, 21
// rounds, loaded 12.2 (near idle not measured): [4096, 512] 1.64x / 1.62x (1 thread) and 1.60x
// / 1.67x (2 threads), 21 of 21 faster each; [16384, 128] 2.01x (2 threads); in cache (no
// requests) unchanged. 2 or 8 steps ahead measured alike (1.48-1.70x, 15 rounds).
TREX_AVX512_FN __attribute__((always_inline)) void r4_prefetch_row(const float* kt, const float* zt,
                                                                  int64_t o, bool two) {
  __builtin_prefetch(zt + o, 0, 2);
  __builtin_prefetch(kt + o, 0, 2);
  if (two) {
    __builtin_prefetch(zt + o + 16, 0, 2);
    __builtin_prefetch(kt + o + 16, 0, 2);
  }
}

// Requests the lines of zt and kt that step `a` reads, 32 channels of each of its rows (r4_rows'
// x: tokens 4(i-1).. at offset 0, tokens 4i.. at offset hd; nothing past the walk's end), then
// moves `a` on a step.
TREX_AVX512_FN __attribute__((always_inline)) void r4_prefetch_next(const float* kt, const float* zt,
                                                                   int64_t hd, const R4Walk& w, R4Ahead& a) {
  if (a.i >= w.i1) return;
  const int64_t C = 2 * hd, lo = 4 * (a.i - 1) * C + a.c, hi = 4 * a.i * C + hd + a.c;
  const bool two = a.c + 16 < w.e1;  // the step's second line of each row is in range
  if (a.i > 0)
    for (int j = 0; j < 4; ++j) r4_prefetch_row(kt, zt, lo + j * C, two);
  for (int j = 0; j < 4; ++j) r4_prefetch_row(kt, zt, hi + j * C, two);
  if ((a.c += kR4Step) >= w.e1) a.c = w.e0, ++a.i;
}

// The lanes of the vector at channel c of a step ending at e1: all (a constant, so that load16 and
// store16 take no branch) in the steps that lie wholly before e1.
template <bool kFull>
TREX_AVX512_FN __mmask16 r4_lanes(int64_t c, int64_t e1) {
  if (kFull) return simd::kAll16;
  return c < e1 ? simd::lanes16(c, e1) : __mmask16(0);
}

// Scores of rows J0..7 at channels [c, c + 32) (lanes off in m[v] load 0), their max, and p[j][v]
// = exp(score - max), sum[v] and acc[v] (exp-weighted kt) in row order: stats64's operations.
// The loops are unrolled so that p stays in registers (GCC kept it on the stack otherwise).
template <int J0>
TREX_AVX512_FN void r4_step(const float* kt, const float* zt, const float* ape, const R4Rows& r,
                            int64_t c, const __mmask16* m, __m512 (*p)[2], __m512* sum,
                            __m512* acc) {
  __m512 mx[2];
#pragma GCC unroll 2
  for (int v = 0; v < 2; ++v) mx[v] = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
#pragma GCC unroll 8
  for (int j = J0; j < 8; ++j)
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v) {
      p[j][v] = _mm512_add_ps(simd::load16(zt + r.x[j] + c + 16 * v, m[v]),
                              simd::load16(ape + r.a[j] + c + 16 * v, m[v]));
      mx[v] = simd::max16(mx[v], p[j][v]);
    }
#pragma GCC unroll 2
  for (int v = 0; v < 2; ++v) sum[v] = acc[v] = _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int j = J0; j < 8; ++j)
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v) {
      p[j][v] = exp16_nonpos(_mm512_sub_ps(p[j][v], mx[v]));
      sum[v] = _mm512_add_ps(sum[v], p[j][v]);
      acc[v] = _mm512_fmadd_ps(p[j][v], simd::load16(kt + r.x[j] + c + 16 * v, m[v]), acc[v]);
    }
}

// k at channels [c, c + 16) of entry i (lanes off in m load 0): the scores of rows J0..7, their
// max, p[j] = exp(score - max), and the exp-weighted kt over the sum in row order: stats64's
// operations, one vector at a time, as the backward (r4_backward_vector). From memory the
// forward takes this: with r4_step's two vectors at once (p[8][2], 16 exps live) GCC kept
// scores and exps on the stack (perf, one thread: 13.5% of the walk's samples on instructions
// addressing the stack; 346 of them in the walk, 258 this way). In cache (the model's [2048,
// 128]) this way measured 0.99x against main's source as the same harness's B (1.01x): within
// the harness's layout noise (~1%), but no gain, so there the two vectors' chains stay.
// Each lane's operations are r4_step's: the same bits.
template <int J0>
TREX_AVX512_FN __m512 r4_vector(const float* kt, const float* zt, const float* ape, const R4Rows& r,
                                int64_t c, __mmask16 m) {
  __m512 p[8], mx = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
#pragma GCC unroll 8
  for (int j = J0; j < 8; ++j) {
    p[j] = _mm512_add_ps(simd::load16(zt + r.x[j] + c, m), simd::load16(ape + r.a[j] + c, m));
    mx = simd::max16(mx, p[j]);
  }
  __m512 sum = _mm512_setzero_ps(), acc = _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int j = J0; j < 8; ++j) {
    p[j] = exp16_nonpos(_mm512_sub_ps(p[j], mx));
    sum = _mm512_add_ps(sum, p[j]);
    acc = _mm512_fmadd_ps(p[j], simd::load16(kt + r.x[j] + c, m), acc);
  }
  return _mm512_div_ps(acc, sum);
}

// k over the walk (the forward, ratio 4): kOne, a vector at a time (r4_vector), else both
// vectors of the step at once (r4_step).
template <int J0, bool kFull, bool kOne>
TREX_AVX512_FN void r4_forward_step(const float* kt, const float* zt, const float* ape, float* k,
                                    const R4Rows& r, int64_t i, int64_t c, int64_t e1, int64_t hd) {
  if constexpr (kOne) {
#pragma GCC unroll 2
    for (int v = 0; v < 2; ++v) {
      const __mmask16 m = r4_lanes<kFull>(c + 16 * v, e1);
      if (m) simd::store16(k + i * hd + c + 16 * v, r4_vector<J0>(kt, zt, ape, r, c + 16 * v, m), m);
    }
    return;
  }
  __mmask16 m[2];
#pragma GCC unroll 2
  for (int v = 0; v < 2; ++v) m[v] = r4_lanes<kFull>(c + 16 * v, e1);
  __m512 p[8][2], sum[2], acc[2];
  r4_step<J0>(kt, zt, ape, r, c, m, p, sum, acc);
#pragma GCC unroll 2
  for (int v = 0; v < 2; ++v)
    if (m[v]) simd::store16(k + i * hd + c + 16 * v, _mm512_div_ps(acc[v], sum[v]), m[v]);
}

// The walk of ratio 4 on AVX-512, forward: steps of kR4Step channels over the entries [w.i0,
// w.i1) and channels [w.e0, w.e1), with kPrefetch the lines of the step kPrefetchSteps ahead
// requested before each step, each step's variant (its first row, whether all its channels are
// in range) picked at run time. Plain arguments, not a step object: passed as an object the
// forward ran 0.68x (quiet lane, loaded; GCC kept the members in memory).
template <bool kPrefetch>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void forward_r4_512(
    const float* kt, const float* zt, const float* ape, float* k, const R4Walk& w, int64_t hd) {
  R4Ahead ahead{w.i0, w.e0};
  if (kPrefetch)
    for (int64_t s = 0; s < kPrefetchSteps; ++s) r4_prefetch_next(kt, zt, hd, w, ahead);
  R4Rows r;
  for (int64_t i = w.i0; i < w.i1; ++i) {
    r4_rows(i, hd, &r);
    for (int64_t c = w.e0; c < w.e1; c += kR4Step) {
      if (kPrefetch) r4_prefetch_next(kt, zt, hd, w, ahead);
      const bool full = c + kR4Step <= w.e1;
      if (r.j0 == 0 && full) r4_forward_step<0, true, kPrefetch>(kt, zt, ape, k, r, i, c, w.e1, hd);
      else if (r.j0 == 0) r4_forward_step<0, false, kPrefetch>(kt, zt, ape, k, r, i, c, w.e1, hd);
      else if (full) r4_forward_step<4, true, kPrefetch>(kt, zt, ape, k, r, i, c, w.e1, hd);
      else r4_forward_step<4, false, kPrefetch>(kt, zt, ape, k, r, i, c, w.e1, hd);
    }
  }
}

// The backward's walk (dkt, dzt and dape; backward_r4_512): backward_entries512's operations on
// the exps in registers, one 16-channel vector of all 8 rows at a time (both vectors of a step
// at once kept too many values live: GCC spilled the exps every step; session 19, 1.25x in L1).
// Its rows are addressed from two offsets per step (the entry's first token and its second half:
// row j = lo + j C or hi + (j - 4) C, with R4Rows' offsets as its rows), ape and the walk's dape
// sums sit in a per-thread buffer packed per vector (R4Packed), one pointer with the rows at fixed
// displacements, and each row's kt stays in a register from the sum to the gradient. Until session
// 24 a step read R4Rows' 16 offsets and seven arrays: GCC kept them in 16 general registers and
// spilled them every step (perf, one thread: 18.7% of the walk's samples on the 475 instructions
// that addressed the stack). The same operations per channel in the same row order, and dape the
// same sums in entry order (added once into the chunk's zeroed dape, 0 + x = x): the same bits.
struct R4Packed {
  float* ape;   // vector q of ape row j at (q * 8 + j) * 16 (lanes at or past e1: 0)
  float* dape;  // the walk's dape sums in the same layout, from zeros
};

// The 8 rows of ape (R4Rows' a: ape row j & 3, the second half hd on) for the walk's channels
// packed into per-thread buffers, and the dape sums zeroed.
TREX_AVX512_FN R4Packed r4_pack(const float* ape, int64_t hd, int64_t e0, int64_t e1) {
  thread_local Scratch buf;
  const int64_t vecs = (e1 - e0 + 15) / 16, floats = vecs * 8 * 16;
  float* b = buf.get(size_t(2 * floats));
  R4Packed pk{b, b + floats};
  for (int64_t q = 0; q < vecs; ++q)
    for (int j = 0; j < 8; ++j) {
      const int64_t c = e0 + 16 * q;
      _mm512_storeu_ps(pk.ape + (q * 8 + j) * 16, simd::load16(ape + (j & 3) * 2 * hd + (j < 4 ? 0 : hd) + c, simd::lanes16(c, e1)));
      _mm512_storeu_ps(pk.dape + (q * 8 + j) * 16, _mm512_setzero_ps());
    }
  return pk;
}

// dape (the chunk's, zeroed) += the walk's packed sums.
TREX_AVX512_FN void r4_unpack_dape(const R4Packed& pk, float* dape, int64_t hd, int64_t e0, int64_t e1) {
  for (int64_t q = 0; q < (e1 - e0 + 15) / 16; ++q)
    for (int j = 0; j < 8; ++j) {
      const int64_t c = e0 + 16 * q;
      const __mmask16 m = simd::lanes16(c, e1);
      float* da = dape + (j & 3) * 2 * hd + (j < 4 ? 0 : hd) + c;
      simd::store16(da, _mm512_add_ps(simd::load16(da, m), _mm512_loadu_ps(pk.dape + (q * 8 + j) * 16)), m);
    }
}

// One 16-channel vector (lanes m) of rows J0..7 of entry i: row j's kt/zt/dkt/dzt at lo + j C
// (j < 4) or hi + (j - 4) C, its packed ape and dape at ap + 16 j and dp + 16 j.
template <int J0, bool kFull, bool kNt>
TREX_AVX512_FN void r4_backward_vector(const float* kt, const float* zt, const float* dkr,
                                       float* dkt, float* dzt, const float* ap, float* dp,
                                       int64_t lo, int64_t hi, int64_t C, __mmask16 m) {
  __m512 p[8], kr[8];
  __m512 mx = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
#pragma GCC unroll 8
  for (int j = J0; j < 8; ++j) {
    const int64_t o = (j < 4 ? lo : hi) + (j & 3) * C;
    p[j] = _mm512_add_ps(kFull ? _mm512_loadu_ps(zt + o) : _mm512_maskz_loadu_ps(m, zt + o), _mm512_loadu_ps(ap + 16 * j));
    mx = simd::max16(mx, p[j]);
  }
  __m512 sum = _mm512_setzero_ps(), acc = _mm512_setzero_ps();
#pragma GCC unroll 8
  for (int j = J0; j < 8; ++j) {
    const int64_t o = (j < 4 ? lo : hi) + (j & 3) * C;
    kr[j] = kFull ? _mm512_loadu_ps(kt + o) : _mm512_maskz_loadu_ps(m, kt + o);
    p[j] = exp16_nonpos(_mm512_sub_ps(p[j], mx));
    sum = _mm512_add_ps(sum, p[j]);
    acc = _mm512_fmadd_ps(p[j], kr[j], acc);
  }
  const __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.f), sum);
  // A masked multiply: GCC's default -ffp-contract=fast fused kt - acc inv into one fnmadd here
  // (another rounding: other bits than the 8-channel path); the builtin is never contracted.
  const __m512 kv = _mm512_maskz_mul_ps(simd::kAll16, acc, inv);
  const __m512 gk = _mm512_mul_ps(kFull ? _mm512_loadu_ps(dkr) : _mm512_maskz_loadu_ps(m, dkr), inv);
#pragma GCC unroll 8
  for (int j = J0; j < 8; ++j) {
    const int64_t o = (j < 4 ? lo : hi) + (j & 3) * C;
    const __m512 g = _mm512_mul_ps(p[j], gk);
    const __m512 dz = _mm512_mul_ps(g, _mm512_sub_ps(kr[j], kv));
    if (kFull && kNt) {  // 64-byte aligned (kv_compress_backward checks)
      _mm512_stream_ps(dkt + o, g);
      _mm512_stream_ps(dzt + o, dz);
    } else if (kFull) {
      _mm512_storeu_ps(dkt + o, g);
      _mm512_storeu_ps(dzt + o, dz);
    } else {
      _mm512_mask_storeu_ps(dkt + o, m, g);
      _mm512_mask_storeu_ps(dzt + o, m, dz);
    }
    _mm512_storeu_ps(dp + 16 * j, _mm512_add_ps(_mm512_loadu_ps(dp + 16 * j), dz));
  }
}

// One step (kR4Step channels from c) of the backward's walk: its two vectors in turn.
template <int J0, bool kFull, bool kNt>
TREX_AVX512_FN void r4_backward_step(const float* kt, const float* zt, const float* dkr, float* dkt,
                                     float* dzt, const float* ap, float* dp, int64_t lo, int64_t hi,
                                     int64_t C, int64_t c, int64_t e1) {
#pragma GCC unroll 2
  for (int v = 0; v < 2; ++v) {
    const int64_t cv = c + 16 * v;
    if (!kFull && cv >= e1) break;
    r4_backward_vector<J0, kFull, kNt>(kt, zt, dkr + 16 * v, dkt, dzt, ap + 128 * v, dp + 128 * v,
                                       lo + cv, hi + cv, C, kFull ? simd::kAll16 : simd::lanes16(cv, e1));
  }
}

template <bool kNt, bool kPrefetch>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma"))) void r4_backward_walk512(
    const float* kt, const float* zt, const float* ape, const float* dk, float* dkt, float* dzt,
    float* dape, const R4Walk& w, int64_t hd) {
  const int64_t C = 2 * hd;
  const R4Packed pk = r4_pack(ape, hd, w.e0, w.e1);
  R4Ahead ahead{w.i0, w.e0};
  if (kPrefetch)
    for (int64_t s = 0; s < kPrefetchSteps; ++s) r4_prefetch_next(kt, zt, hd, w, ahead);
  for (int64_t i = w.i0; i < w.i1; ++i) {
    // Rows 0-3: tokens 4(i-1).., channel offset 0; rows 4-7: tokens 4i.., offset hd.
    const int64_t lo = 4 * (i - 1) * C, hi = 4 * i * C + hd;
    const float* dkr = dk + i * hd;
    for (int64_t c = w.e0; c < w.e1; c += kR4Step) {
      const float* ap = pk.ape + (c - w.e0) * 8;  // vector (c - e0) / 16, 8 rows of 16
      float* dp = pk.dape + (c - w.e0) * 8;
      if (kPrefetch) r4_prefetch_next(kt, zt, hd, w, ahead);
      const bool full = c + kR4Step <= w.e1;
      if (i > 0 && full) r4_backward_step<0, true, kNt>(kt, zt, dkr + c, dkt, dzt, ap, dp, lo, hi, C, c, w.e1);
      else if (i > 0) r4_backward_step<0, false, kNt>(kt, zt, dkr + c, dkt, dzt, ap, dp, lo, hi, C, c, w.e1);
      else if (full) r4_backward_step<4, true, kNt>(kt, zt, dkr + c, dkt, dzt, ap, dp, lo, hi, C, c, w.e1);
      else r4_backward_step<4, false, kNt>(kt, zt, dkr + c, dkt, dzt, ap, dp, lo, hi, C, c, w.e1);
    }
  }
  r4_unpack_dape(pk, dape, hd, w.e0, w.e1);
}

void backward_r4_512(const float* kt, const float* zt, const float* ape, const float* dk,
                     float* dkt, float* dzt, float* dape, const R4Walk& w, int64_t hd, bool nt,
                     bool prefetch) {
  const auto walk = nt ? (prefetch ? r4_backward_walk512<true, true> : r4_backward_walk512<true, false>)
                       : (prefetch ? r4_backward_walk512<false, true> : r4_backward_walk512<false, false>);
  walk(kt, zt, ape, dk, dkt, dzt, dape, w, hd);
}

// Work items [w0, w1) of the forward for ratio 4 on AVX-512 (item w: entry w / blocks, channel
// block w % blocks of cb channels) as up to three walks: the first entry's blocks from w0, the
// whole entries, the last entry's blocks up to w1. prefetch: request lines ahead.
void forward_items_r4(const float* kt, const float* zt, const float* ape, float* k, int64_t w0,
                      int64_t w1, int64_t blocks, int64_t cb, int64_t hd, bool prefetch) {
  const auto walk = prefetch ? forward_r4_512<true> : forward_r4_512<false>;
  while (w0 < w1) {
    const int64_t i = w0 / blocks, b = w0 % blocks;
    if (b == 0 && w1 - w0 >= blocks) {  // whole entries
      const int64_t i1 = w1 / blocks;
      walk(kt, zt, ape, k, R4Walk{i, i1, 0, hd}, hd);
      w0 = i1 * blocks;
    } else {  // blocks [b, b1) of entry i
      const int64_t b1 = std::min(blocks, b + (w1 - w0));
      walk(kt, zt, ape, k, R4Walk{i, i + 1, b * cb, std::min(hd, b1 * cb)}, hd);
      w0 += b1 - b;
    }
  }
}

// Channels [e0, e1) of entries [i0, i1).
// stats: the statistics rows (kv_compress_forward_keeping_stats) or null.
void forward_block(const float* kt, const float* zt, const float* ape, float* k, int64_t i0,
                   int64_t i1, int64_t hd, int ratio, int64_t e0, int64_t e1, float* stats) {
  RowOffsets o;
  for (int64_t i = i0; i < i1; ++i) {
    entry_offsets(i, ratio, hd, &o);
    float* st = stats ? stats + i * 3 * hd : nullptr;
    int64_t e = e0;
#ifdef TREX_ELEM_AVX2
    for (; e + 8 <= e1; e += 8) {
      __m256 mx, sum, acc;
      stats8(kt, zt, ape, o, e, &mx, &sum, &acc);
      _mm256_storeu_ps(k + i * hd + e, _mm256_div_ps(acc, sum));
      if (st) {
        _mm256_storeu_ps(st + e, mx);
        _mm256_storeu_ps(st + hd + e, sum);
        _mm256_storeu_ps(st + 2 * hd + e, acc);
      }
    }
#endif
    for (; e < e1; ++e) forward_channel(kt, zt, ape, o, e, k + i * hd + e, st, hd);
  }
}

// Zeroes dape and the gradients of the (token, channel) positions no entry reads, channels
// [e0, e1).
void zero_unread(float* dkt, float* dzt, float* dape, int64_t s, int64_t n, int64_t hd, int ratio,
                 int64_t e0, int64_t e1) {
  int64_t C = compressor_width(ratio, hd);
  // Every (token, channel) is read by at most one entry, which writes its gradient below; only
  // the ones no entry reads are zeroed here: the trailing partial block (both halves for m = 4)
  // and, for m = 4, the first half of the last complete block (entry n does not exist).
  auto zero = [&](int64_t t, int64_t off) {
    std::fill(dkt + t * C + off + e0, dkt + t * C + off + e1, 0.f);
    std::fill(dzt + t * C + off + e0, dzt + t * C + off + e1, 0.f);
  };
  for (int64_t t = n * ratio; t < s; ++t)
    for (int64_t off = 0; off < C; off += hd) zero(t, off);
  if (ratio == 4 && n > 0)
    for (int64_t t = 4 * (n - 1); t < 4 * n; ++t) zero(t, 0);
  for (int64_t r = 0; r < ratio; ++r)
    for (int64_t off = 0; off < C; off += hd) std::fill(dape + r * C + off + e0, dape + r * C + off + e1, 0.f);
}

// Channels [e0, e1) of entries [i0, i1) on the AVX2 (8 channels at a time) or scalar path,
// dape += each entry's dzt in entry order.
void backward_entries_8(const float* kt, const float* zt, const float* ape, const float* dk,
                        float* dkt, float* dzt, float* dape, int64_t i0, int64_t i1, int64_t hd,
                        int ratio, int64_t e0, int64_t e1) {
  RowOffsets o;
  for (int64_t i = i0; i < i1; ++i) {
    entry_offsets(i, ratio, hd, &o);
    int64_t e = e0;
#ifdef TREX_ELEM_AVX2
    for (; e + 8 <= e1; e += 8) {
      __m256 mx, sum, acc;
      stats8(kt, zt, ape, o, e, &mx, &sum, &acc);
      __m256 inv = _mm256_div_ps(_mm256_set1_ps(1.f), sum);
      __m256 kv = _mm256_mul_ps(acc, inv);
      // Opaque to GCC's -ffp-contract=fast, which here fused kt - acc inv into one fnmadd once
      // this loop moved into backward_entries_8 (another rounding than the 16-lane paths).
      __asm__("" : "+x"(kv));
      __m256 gk = _mm256_mul_ps(_mm256_loadu_ps(dk + i * hd + e), inv);
      for (int j = 0; j < o.n; ++j) {
        __m256 g = _mm256_mul_ps(simd::exp8(_mm256_sub_ps(score8(zt, ape, o, j, e), mx)), gk);
        __m256 dz = _mm256_mul_ps(g, _mm256_sub_ps(_mm256_loadu_ps(kt + o.x[j] + e), kv));
        _mm256_storeu_ps(dkt + o.x[j] + e, g);
        _mm256_storeu_ps(dzt + o.x[j] + e, dz);
        float* da = dape + o.ape[j] + e;
        _mm256_storeu_ps(da, _mm256_add_ps(_mm256_loadu_ps(da), dz));
      }
    }
#endif
    for (; e < e1; ++e)
      backward_channel(kt, zt, ape, o, e, dk[i * hd + e], dkt, dzt, dape);
  }
}

// Every entry, channels [e0, e1) (the channel-block split of ratio != 4); prefetch: the AVX-512
// tiles request the next tile's lines.
void backward_block(const float* kt, const float* zt, const float* ape, const float* dk,
                    float* dkt, float* dzt, float* dape, int64_t s, int64_t n, int64_t hd,
                    int ratio, int64_t e0, int64_t e1, bool nt, bool prefetch) {
  zero_unread(dkt, dzt, dape, s, n, hd, ratio, e0, e1);
  if (row_isa() == core::Isa::kAvx512)
    return backward_entries512(kt, zt, ape, dk, dkt, dzt, dape, n, hd, ratio, e0, e1, nt, prefetch);
  backward_entries_8(kt, zt, ape, dk, dkt, dzt, dape, 0, n, hd, ratio, e0, e1);
}

// Ratio 4's backward: entries in chunks of kR4ChunkEntries, each chunk's dzt summed into a dape of
// its own (in entry order, from zeros), then dape = the chunks' sums added in chunk order. The
// chunks are fixed by the entry count alone, so the sum is the same on any thread count and
// path. Work items are (chunk, channel block): untuned one block of every channel, so that a
// thread walks an entry's whole half-rows and the next entry's follow them in memory; until
// session 22 each thread walked one 64-channel block over every entry (dape then summed in entry
// order), 256-byte pieces of rows 4 KiB apart that the prefetchers did not follow (perf, one
// thread: the samples on the max step's zt loads).
constexpr int64_t kR4ChunkEntries = kCompressorR4ChunkEntries;

void backward_r4_chunks(const float* kt, const float* zt, const float* ape, const float* dk,
                        float* dkt, float* dzt, float* dape, int64_t s, int64_t n, int64_t hd,
                        int64_t cb, bool nt, core::ThreadPool& tp) {
  const int64_t C = compressor_width(4, hd), rows = 4 * C;  // dape: 4 ape rows of C
  zero_unread(dkt, dzt, dape, s, n, hd, 4, 0, hd);
  if (n == 0) return;
  const int64_t chunks = (n + kR4ChunkEntries - 1) / kR4ChunkEntries, blocks = (hd + cb - 1) / cb;
  thread_local Scratch sums;  // the caller's: chunk g's dape at g * rows
  float* part = sums.get(size_t(chunks * rows));
  const bool wide = row_isa() == core::Isa::kAvx512;
  // From memory the walk requests the lines kPrefetchSteps steps ahead, as the forward's does.
  const bool prefetch = 2 * s * C * int64_t(sizeof(float)) > kPrefetchMinBytes;
  tp.parallel_for(0, chunks * blocks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t w = lo; w < hi; ++w) {
      const int64_t g = w / blocks, e0 = (w % blocks) * cb, e1 = std::min(hd, e0 + cb);
      const int64_t i0 = g * kR4ChunkEntries, i1 = std::min(n, i0 + kR4ChunkEntries);
      float* pg = part + g * rows;
      for (int64_t r = 0; r < 4; ++r)
        for (int64_t off = 0; off < C; off += hd) std::fill(pg + r * C + off + e0, pg + r * C + off + e1, 0.f);
      if (wide) backward_r4_512(kt, zt, ape, dk, dkt, dzt, pg, R4Walk{i0, i1, e0, e1}, hd, nt, prefetch);
      else backward_entries_8(kt, zt, ape, dk, dkt, dzt, pg, i0, i1, hd, 4, e0, e1);
    }
    simd::fence_streams(nt);
  });
  std::copy(part, part + rows, dape);
  for (int64_t g = 1; g < chunks; ++g)
    for (int64_t q = 0; q < rows; ++q) dape[q] += part[g * rows + q];
}

constexpr int64_t kChannelBlock = builtin::kKvChannelBlock;  // tunable (tuning.h)

}  // namespace

void kv_compress_backward_spill_for_test(bool on) { g_spill_every_entry.store(on); }

namespace {

// kv_compress_forward; stats (ratio != 4) null or the statistics rows to write.
void forward(const float* kt, const float* zt, const float* ape, float* k, float* stats, int64_t s,
             int64_t hd, int ratio, core::ThreadPool* pool) {
  if (ratio == 4) stats = nullptr;  // compressor_stats_width 0: none kept
  int64_t n = compressor_entries(s, ratio);
  if (n <= 0 || hd <= 0) return;
  core::ThreadPool& tp = core::pool_or_default(pool);
  // Entries are independent in the forward: split entries and channel blocks alike.
  const int64_t tuned_cb = tuned_or("kv_compress.fwd", {s, hd, ratio}, "channel_block", 0);
  const int64_t cb = tuned_cb > 0 ? tuned_cb : kChannelBlock;
  int64_t blocks = (hd + cb - 1) / cb;
  const bool wide = row_isa() == core::Isa::kAvx512;
  const bool from_memory = 2 * s * compressor_width(ratio, hd) * int64_t(sizeof(float)) > kPrefetchMinBytes;
  if (wide && ratio != 4 && tuned_cb == 0) {
    // Untuned, ratio != 4: whole entries claimed one at a time, two in flight per thread
    // (forward_pipelined512), on the threads that start the job (run_dynamic: no wait for a
    // worker's wake-up). A tuned channel_block keeps the chunks of items below.
    EntryClaims claims;
    tp.run_dynamic([&](int) {
      if (from_memory) forward_pipelined512<true>(kt, zt, ape, k, n, hd, ratio, claims, stats);
      else forward_pipelined512<false>(kt, zt, ape, k, n, hd, ratio, claims, stats);
    });
    return;
  }
  // Chunks of compressor_forward_chunk_items (16, ratio 4 64), so that each tile can request the
  // next one's lines (entries are independent: the chunking changes no bit).
  tp.parallel_for(0, n * blocks, compressor_forward_chunk_items(ratio), [&](int64_t lo, int64_t hi) {
    if (wide && ratio != 4) return forward_rows_items512(kt, zt, ape, k, lo, hi, blocks, cb, hd, ratio, stats);
    if (wide) return forward_items_r4(kt, zt, ape, k, lo, hi, blocks, cb, hd, from_memory);
    for (int64_t w = lo; w < hi; ++w) {
      int64_t i = w / blocks, b = w % blocks;
      forward_block(kt, zt, ape, k, i, i + 1, hd, ratio, b * cb, std::min(hd, (b + 1) * cb), stats);
    }
  });
}

}  // namespace

void kv_compress_forward(const float* kt, const float* zt, const float* ape, float* k, int64_t s,
                         int64_t hd, int ratio, core::ThreadPool* pool) {
  forward(kt, zt, ape, k, nullptr, s, hd, ratio, pool);
}

void kv_compress_forward_keeping_stats(const float* kt, const float* zt, const float* ape, float* k,
                                       float* stats, int64_t s, int64_t hd, int ratio,
                                       core::ThreadPool* pool) {
  forward(kt, zt, ape, k, stats, s, hd, ratio, pool);
}

namespace {

// kv_compress_backward; stats (ratio != 4) null or the forward's statistics rows, read where the
// backward without them splits by entries (then backward_stats_rows512; elsewhere not read).
void backward(const float* kt, const float* zt, const float* ape, const float* stats,
              const float* dk, float* dkt, float* dzt, float* dape, int64_t s, int64_t hd,
              int ratio, core::ThreadPool* pool) {
  if (ratio == 4) stats = nullptr;
  if (hd <= 0 || s < 0) return;
  int64_t n = compressor_entries(s, ratio);
  core::ThreadPool& tp = core::pool_or_default(pool);
  const int64_t tuned_cb = tuned_or("kv_compress.bwd", {s, hd, ratio}, "channel_block", 0);
  // Ratio 4 untuned: one block of every channel (backward_r4_chunks; tuning_builtins.h).
  const int64_t cb = tuned_cb > 0 ? tuned_cb : builtin::kv_backward_channel_block(hd, ratio);
  int64_t blocks = (hd + cb - 1) / cb;
  // dkt and dzt are written once each, never read: streamed when far larger than the caches
  // (the row kernels' rule, simd::use_streaming) on the 16-lane path, which saves the read of
  // every line a plain store does first (two of the pass's seven streams). Only full vectors
  // stream, so every row and block must start on a 64-byte boundary.
  const int64_t C = compressor_width(ratio, hd);
  const bool wide = row_isa() == core::Isa::kAvx512;
  // The built-in split on AVX-512 for ratio != 4 (no channel_block tuned): entries (below).
  const int threads = tp.num_threads();
  // Below 1 MiB per input the two parallel phases cost more than they save: [2048, 64] ratio
  // 128 (one 64-channel block, run on the caller) took 0.075 ms, split by entries 0.17 ms.
  const bool by_entries = wide && tuned_cb == 0 && ratio != 4 && n > 0 && s * C >= (int64_t(1) << 18);
  const bool nt = wide && hd % 16 == 0 && (by_entries || cb % 16 == 0) &&
                  simd::use_streaming<float>(s * C, C, {dkt, dzt}) &&
                  reinterpret_cast<uintptr_t>(dkt) % 64 == 0 && reinterpret_cast<uintptr_t>(dzt) % 64 == 0;
  if (by_entries) {
    // One entry at a time over every channel, taken in entry order by whichever thread is free,
    // each entry's rows in memory order (backward_rows512): the channel-block split had each
    // thread read 256-byte pieces of 128 rows 2 KiB apart, and two threads ran no faster than
    // one (halves of 1 KiB per row, one per thread, measured 0.68-0.76x on one thread at
    // [8192, 512] in session 20: the pieces of a row another thread reads were likely fetched
    // too). dape sums over entries in entry order: each entry adds its dzt, kept in L2, once the
    // entry before it has (backward_rows512's turn), the same additions in the same order as one
    // thread: the same bits. Until session 20 the entries after the first chunk wrote their dzt
    // and a second pass read them back from memory (7/8 of dzt again on 2 threads). (Ratio 4,
    // whose eight rows per entry are two groups of half-rows, ran slower split this way at
    // [4096, 512] on two threads, 6.5 vs 4.6 ms: it keeps the channel blocks.)
    zero_unread(dkt, dzt, dape, s, n, hd, ratio, 0, hd);
    if (threads == 1 && stats) {
      backward_stats_rows512(kt, zt, ape, stats, dk, dkt, dzt, dape, n, hd, ratio, 0, ratio, nt);
      simd::fence_streams(nt);
      return;
    }
    if (threads == 1) {
      backward_rows512(kt, zt, ape, dk, dkt, dzt, dape, 0, n, hd, ratio, 0, hd, nt, nullptr, nullptr);
      simd::fence_streams(nt);
      return;
    }
    // Any subset of the threads completes the entries (each claims them from the counter and
    // never waits on another past wait_turn_briefly), so the job runs on the threads that start
    // it (run_dynamic): with run() the caller waited for every worker's wake-up, which under
    // load took longer than the model's whole backward (session 25: [2048, 128] on two threads,
    // main 0.38 ms wall in some runs against 0.12-0.18 ms).
    if (stats) {
      // Ranges of rows of every entry, one per thread (multiples of kStatsRows), claimed from a
      // counter (a thread that starts late finds them taken): backward_stats_rows512.
      const int span = int((ratio + kStatsRows * threads - 1) / (kStatsRows * threads) * kStatsRows);
      const int parts = (ratio + span - 1) / span;
      EntryClaims claims;
      tp.run_dynamic([&](int) {
        for (int64_t q = claims.take(); q < parts; q = claims.take())
          backward_stats_rows512(kt, zt, ape, stats, dk, dkt, dzt, dape, n, hd, ratio, int(q) * span,
                                 std::min(ratio, int(q + 1) * span), nt);
        simd::fence_streams(nt);
      });
      return;
    }
    DapeTurns turns(n, ratio);  // ratio != 4: every entry has ratio rows
    EntryClaims claims;
    tp.run_dynamic([&](int) {
      backward_rows512(kt, zt, ape, dk, dkt, dzt, dape, 0, n, hd, ratio, 0, hd, nt, &turns, &claims);
      simd::fence_streams(nt);
    });
    return;
  }
  if (ratio == 4) return backward_r4_chunks(kt, zt, ape, dk, dkt, dzt, dape, s, n, hd, cb, nt, tp);
  const bool prefetch = 2 * s * C * int64_t(sizeof(float)) > kPrefetchMinBytes;
  tp.parallel_for(0, blocks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b)
      backward_block(kt, zt, ape, dk, dkt, dzt, dape, s, n, hd, ratio, b * cb,
                     std::min(hd, (b + 1) * cb), nt, prefetch);
    simd::fence_streams(nt);
  });
}

}  // namespace

void kv_compress_backward(const float* kt, const float* zt, const float* ape, const float* dk,
                          float* dkt, float* dzt, float* dape, int64_t s, int64_t hd, int ratio,
                          core::ThreadPool* pool) {
  backward(kt, zt, ape, nullptr, dk, dkt, dzt, dape, s, hd, ratio, pool);
}

void kv_compress_backward_from_stats(const float* kt, const float* zt, const float* ape,
                                     const float* stats, const float* dk, float* dkt, float* dzt,
                                     float* dape, int64_t s, int64_t hd, int ratio,
                                     core::ThreadPool* pool) {
  backward(kt, zt, ape, stats, dk, dkt, dzt, dape, s, hd, ratio, pool);
}

}  // namespace trex::kernels
