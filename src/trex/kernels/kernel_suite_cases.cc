// The cases of the kernel suite: for each kernel, seeded inputs at the check, quick and full
// sizes, the fused call, the reference call, and the traffic and FLOP counts of one call.
//
// Byte counts are the minimum traffic (every input read once, every output written once; small
// parameter vectors included); FLOPs count only contractions (2 per multiply-add), as in the
// MFU convention of spec/deepseek-v4.md section 13, so elementwise kernels are judged by bytes.
// Tolerances (atol = rtol) are the gtest suite's: fp32 1e-4, bf16 storage 1e-2, fp32 sums over
// many bf16-derived terms 1e-3.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <type_traits>

#include "trex/core/arena.h"
#include "trex/core/bf16.h"
#include "trex/core/bf16_stream.h"
#include "trex/kernels/adamw.h"
#include "trex/kernels/cross_entropy.h"
#include "trex/kernels/gemm.h"
#include "trex/kernels/indexer.h"
#include "trex/kernels/kernel_suite.h"
#include "trex/kernels/kv_compressor.h"
#include "trex/kernels/mhc.h"
#include "trex/kernels/rmsnorm.h"
#include "trex/kernels/rope.h"
#include "trex/kernels/sparse_attention.h"
#include "trex/kernels/swiglu.h"
#include "trex/kernels/tuning_builtins.h"

namespace trex::kernels {
namespace {

using core::bf16;

template <class T>
constexpr SuiteDtype dtype_of() {
  if constexpr (std::is_same_v<T, float>) return SuiteDtype::kF32;
  else if constexpr (std::is_same_v<T, bf16>) return SuiteDtype::kBf16;
  else return SuiteDtype::kI32;
}
template <class T>
const char* dtype_name() {
  return std::is_same_v<T, bf16> ? "bf16" : "fp32";
}
template <class T>
T from(float v) {
  if constexpr (std::is_same_v<T, bf16>) return core::to_bf16(v); else return T(v);
}

// A cheap, seeded value in [-1, 1) (an RNG per element would dominate set-up at full sizes).
float hash_unit(uint64_t i, uint32_t seed) {
  uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t(seed) << 32 | seed);
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  return float(h >> 40) / float(1 << 23) - 1.f;
}

// Builds one case: owns every buffer, registers inputs and output pairs.
class Builder {
 public:
  Builder(std::string kernel, std::string dtype, std::string shape) {
    c_.kernel = std::move(kernel);
    c_.dtype = std::move(dtype);
    c_.shape = std::move(shape);
  }

  // dist (chosen from the seed in check sizes): 0 uniform, 1 heavy-tailed, 2 every 5th zero.
  template <class T>
  T* input(const std::string& name, int64_t n, uint32_t seed, float scale, int dist = 0) {
    T* p = alloc<T>(n);
    for (int64_t i = 0; i < n; ++i) {
      float v = hash_unit(uint64_t(i), seed);
      if (dist == 1) v = v / std::sqrt(std::max(std::fabs(hash_unit(uint64_t(i), seed + 77)), 1e-3f));
      if (dist == 2 && i % 5 == 0) v = 0.f;
      p[i] = from<T>(scale * v);
    }
    add_input<T>(name, p, n);
    return p;
  }
  template <class T>
  T* input_values(const std::string& name, const std::vector<T>& v) {
    T* p = alloc<T>(int64_t(v.size()));
    std::copy(v.begin(), v.end(), p);
    add_input<T>(name, p, int64_t(v.size()));
    return p;
  }
  // A fused and a reference output of n elements. init: outputs the kernel adds into start
  // from these values instead of being poisoned.
  template <class T>
  std::pair<T*, T*> output(const std::string& name, int64_t n, double tol,
                           const T* init = nullptr, bool compare = true) {
    T* f = alloc<T>(n);
    T* r = alloc<T>(n);
    const void* keep = nullptr;
    if (init) {
      T* copy = alloc<T>(n);
      std::copy(init, init + n, copy);
      keep = copy;
      std::copy(init, init + n, f);
      std::copy(init, init + n, r);
    }
    c_.outputs.push_back({name, dtype_of<T>(), f, n, tol, keep, compare});
    c_.ref_outputs.push_back({name, dtype_of<T>(), r, n, tol, keep, compare});
    return {f, r};
  }
  template <class T>
  T* scratch(int64_t n) { return alloc<T>(std::max<int64_t>(n, 1)); }

  KernelCase done(double bytes, double flops, std::function<void()> fused,
                  std::function<void()> ref) {
    c_.bytes = bytes;
    c_.flops = flops;
    c_.fused = std::move(fused);
    c_.ref = std::move(ref);
    c_.storage = std::make_shared<std::vector<std::shared_ptr<void>>>(std::move(owned_));
    return std::move(c_);
  }

 private:
  template <class T>
  T* alloc(int64_t n) {
    auto a = core::aligned_array<T>(size_t(std::max<int64_t>(n, 1)));
    T* p = a.get();
    owned_.push_back(std::shared_ptr<void>(a.release(), [](void* q) { core::aligned_free(q); }));
    return p;
  }
  template <class T>
  void add_input(const std::string& name, T* p, int64_t n) {
    c_.inputs.push_back({name, dtype_of<T>(), p, n, 0, nullptr, true});
  }

  KernelCase c_;
  std::vector<std::shared_ptr<void>> owned_;
};

double tol_of(const char* dtype) { return std::string(dtype) == "bf16" ? 1e-2 : 1e-4; }
std::string dims(std::initializer_list<int64_t> d) {
  std::string s = "[";
  for (int64_t v : d) s += (s.size() > 1 ? ", " : "") + std::to_string(v);
  return s + "]";
}

// ---------------------------------------------------------------------------- gemm
std::vector<std::array<int64_t, 3>> gemm_shapes(SuiteSize size) {
  if (size == SuiteSize::kCheck) return {{37, 29, 61}, {64, 64, 64}, {5, 300, 17}};
  if (size == SuiteSize::kQuick) return {{256, 256, 256}};
  return {{1024, 1024, 1024}};
}

std::vector<KernelCase> gemm_cases(const std::vector<std::array<int64_t, 3>>& shapes, uint32_t seed,
                                   core::ThreadPool* pool) {
  std::vector<KernelCase> out;
  for (auto [m, n, k] : shapes) {
    Builder b("gemm", "fp32", dims({m, n, k}));
    float* A = b.input<float>("a", m * k, seed, 1.f, int(seed % 3));
    float* B = b.input<float>("b", k * n, seed + 1, 1.f);
    // Both sides add k fp32 products in different orders; where a result cancels to near zero
    // their rounding differences are about eps k / 2.5 (2e-4 at k = 8192, which failed the
    // built-in LM-head backward at 1e-4), so the tolerance grows with k past 512 (8x margin).
    auto [C, Cr] = b.output<float>("c", m * n, 1e-4 * std::max<double>(1.0, double(k) / 512.0));
    GemmOptions go;
    go.pool = pool;
    out.push_back(b.done(4.0 * double(m * k + k * n + m * n), 2.0 * double(m) * double(n) * double(k),
        [=] { sgemm(Trans::kNo, Trans::kNo, m, n, k, 1.f, A, k, B, n, 0.f, C, n, go); },
        [=] { sgemm_reference(Trans::kNo, Trans::kNo, m, n, k, 1.f, A, k, B, n, 0.f, Cr, n); }));
  }
  return out;
}

// ---------------------------------------------------------------------------- elementwise
std::vector<std::array<int64_t, 2>> rows_cols(SuiteSize size) {
  if (size == SuiteSize::kCheck) return {{3, 7}, {65, 129}, {16, 64}};
  if (size == SuiteSize::kQuick) return {{256, 1024}};
  return {{4096, 4096}};
}

template <class T>
void rmsnorm_cases(bool bwd, const std::vector<std::array<int64_t, 2>>& shapes, uint32_t seed,
                   core::ThreadPool* pool, std::vector<KernelCase>& out) {
  for (auto [rows, dim] : shapes) {
    Builder b(bwd ? "rmsnorm.bwd" : "rmsnorm.fwd", dtype_name<T>(), dims({rows, dim}));
    const int64_t n = rows * dim;
    const double tol = tol_of(dtype_name<T>());
    T* x = b.input<T>("x", n, seed, 2.f, int(seed % 3));
    if (!bwd) {
      auto [y, yr] = b.output<T>("y", n, tol);
      out.push_back(b.done(2.0 * n * sizeof(T), 0,
          [=] { rmsnorm_forward(x, nullptr, y, rows, dim, kRmsNormEps, pool); },
          [=] { rmsnorm_forward_ref(x, nullptr, yr, rows, dim, kRmsNormEps, pool); }));
    } else {
      T* dy = b.input<T>("dy", n, seed + 1, 1.f);
      auto [dx, dxr] = b.output<T>("dx", n, tol);
      out.push_back(b.done(3.0 * n * sizeof(T), 0,
          [=] { rmsnorm_backward(x, nullptr, dy, dx, nullptr, rows, dim, kRmsNormEps, pool); },
          [=] { rmsnorm_backward_ref(x, nullptr, dy, dxr, nullptr, rows, dim, kRmsNormEps, pool); }));
    }
  }
}

template <class T>
void swiglu_cases(bool bwd, const std::vector<std::array<int64_t, 2>>& shapes, uint32_t seed,
                  core::ThreadPool* pool, std::vector<KernelCase>& out) {
  for (auto [rows, cols] : shapes) {
    Builder b(bwd ? "swiglu.bwd" : "swiglu.fwd", dtype_name<T>(), dims({rows, cols}));
    const int64_t n = rows * cols;
    const double tol = tol_of(dtype_name<T>());
    // Scale 14 puts a share of g and u beyond the limit L = 10, so the clamps are exercised.
    T* g = b.input<T>("g", n, seed, 14.f, int(seed % 3));
    T* u = b.input<T>("u", n, seed + 1, 14.f);
    float* w = b.input<float>("w", rows, seed + 2, 1.f);
    if (!bwd) {
      auto [o, orf] = b.output<T>("out", n, tol);
      out.push_back(b.done(3.0 * n * sizeof(T), 0,
          [=] { swiglu_forward(g, u, w, o, rows, cols, kSwigluLimit, pool); },
          [=] { swiglu_forward_ref(g, u, w, orf, rows, cols, kSwigluLimit, pool); }));
    } else {
      T* dh = b.input<T>("dh", n, seed + 3, 1.f);
      auto [dg, dgr] = b.output<T>("dg", n, tol);
      auto [du, dur] = b.output<T>("du", n, tol);
      // dw is a sum over cols terms as large as L^2 = 100 in magnitude, summed in different
      // orders (SIMD lanes vs sequential): its error grows like sqrt(cols).
      auto [dw, dwr] = b.output<float>("dw", rows, 2e-4 * std::sqrt(double(cols)));
      out.push_back(b.done(5.0 * n * sizeof(T), 0,
          [=] { swiglu_backward(g, u, w, dh, dg, du, dw, rows, cols, kSwigluLimit, pool); },
          [=] { swiglu_backward_ref(g, u, w, dh, dgr, dur, dwr, rows, cols, kSwigluLimit, pool); }));
    }
  }
}

std::vector<std::array<int64_t, 4>> rope_shapes(SuiteSize size) {  // tokens, heads, head_dim, rope_dim
  if (size == SuiteSize::kCheck) return {{5, 2, 16, 8}, {9, 3, 66, 16}};
  if (size == SuiteSize::kQuick) return {{512, 8, 128, 64}};
  return {{4096, 8, 512, 64}};
}

template <class T>
void rope_cases(const std::vector<std::array<int64_t, 4>>& shapes, uint32_t seed, core::ThreadPool* pool,
                std::vector<KernelCase>& out) {
  for (auto [tokens, heads, hd, rd] : shapes) {
    Builder b("rope.fwd", dtype_name<T>(), dims({tokens, heads, hd}) + " rope " + std::to_string(rd));
    const int64_t n = tokens * heads * hd;
    RopeFreqConfig fc;
    fc.rope_dim = int(rd);
    fc.base = 160000;
    fc.yarn = true;
    auto table = std::make_shared<RopeTable>(rope_table(rope_frequencies(fc), tokens));
    std::vector<int64_t> posv(static_cast<size_t>(tokens));
    std::iota(posv.begin(), posv.end(), 0);
    T* x = b.input<T>("x", n, seed, 1.f, int(seed % 3));
    int64_t* pos = b.scratch<int64_t>(tokens);
    std::copy(posv.begin(), posv.end(), pos);
    auto [y, yr] = b.output<T>("y", n, tol_of(dtype_name<T>()));
    out.push_back(b.done(2.0 * n * sizeof(T), 0,
        [=] { rope_apply(x, y, pos, tokens, heads, hd, *table, +1, pool); },
        [=] { rope_apply_ref(x, yr, pos, tokens, heads, hd, *table, +1, pool); }));
  }
}

// ---------------------------------------------------------------------------- cross-entropy
std::vector<std::array<int64_t, 2>> cross_entropy_shapes(SuiteSize size) {
  if (size == SuiteSize::kCheck) return {{3, 7}, {17, 1000}, {5, 4097}};
  if (size == SuiteSize::kQuick) return {{64, 8192}};
  return {{512, 32768}};
}

std::vector<KernelCase> cross_entropy_cases(const std::vector<std::array<int64_t, 2>>& shapes,
                                            uint32_t seed, core::ThreadPool* pool) {
  std::vector<KernelCase> out;
  for (auto [rows, vocab] : shapes) {
    Builder b("cross_entropy", "fp32", dims({rows, vocab}));
    const int64_t n = rows * vocab;
    float* x = b.input<float>("logits", n, seed, 4.f, int(seed % 3));
    std::vector<int32_t> tg(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r)
      tg[size_t(r)] = r % 5 == 4 ? -1 : int32_t(uint32_t(hash_unit(uint64_t(r), seed + 1) * 1e6f + 1e6f) % uint32_t(vocab));
    int32_t* t = b.input_values<int32_t>("targets", tg);
    auto [loss, lossr] = b.output<float>("loss", rows, 1e-4);
    auto [dx, dxr] = b.output<float>("dlogits", n, 1e-4);
    const float scale = 1.f / float(rows);
    out.push_back(b.done(2.0 * n * 4, 0,
        [=] { cross_entropy_forward_backward(x, t, loss, dx, rows, vocab, scale, pool); },
        [=] { cross_entropy_forward_backward_ref(x, t, lossr, dxr, rows, vocab, scale, pool); }));
  }
  return out;
}

// ---------------------------------------------------------------------------- KV compressor
std::vector<std::array<int64_t, 3>> compressor_shapes(SuiteSize size) {  // s, hd, ratio
  if (size == SuiteSize::kCheck) return {{23, 16, 4}, {41, 33, 4}, {300, 17, 128}};
  if (size == SuiteSize::kQuick) return {{512, 64, 4}, {1024, 64, 128}};
  return {{4096, 512, 4}, {8192, 512, 128}};
}

std::vector<KernelCase> compressor_cases(bool bwd, const std::vector<std::array<int64_t, 3>>& shapes,
                                         uint32_t seed, core::ThreadPool* pool) {
  std::vector<KernelCase> out;
  for (auto [s, hd, ratio] : shapes) {
    const int r = int(ratio);
    Builder b(bwd ? "kv_compress.bwd" : "kv_compress.fwd", "fp32",
              dims({s, hd}) + " ratio " + std::to_string(ratio));
    const int64_t C = compressor_width(r, hd), n = compressor_entries(s, r);
    float* kt = b.input<float>("kt", s * C, seed, 1.f, int(seed % 3));
    float* zt = b.input<float>("zt", s * C, seed + 1, 2.f);
    float* ape = b.input<float>("ape", ratio * C, seed + 2, 0.5f);
    const double in_bytes = 4.0 * double(2 * s * C + ratio * C);
    if (!bwd) {
      auto [k, kr] = b.output<float>("k", n * hd, 1e-4);
      // The model's forward: it keeps the statistics its backward reads (ratio != 4; a scratch
      // the gate does not compare, counted among the bytes written).
      const int64_t sw = compressor_stats_width(r, hd);
      float* st = sw > 0 ? b.scratch<float>(n * sw) : nullptr;
      out.push_back(b.done(in_bytes + 4.0 * double(n * hd + n * sw), 0,
          [=] { kv_compress_forward_keeping_stats(kt, zt, ape, k, st, s, hd, r, pool); },
          [=] { kv_compress_forward_ref(kt, zt, ape, kr, s, hd, r, pool); }));
    } else {
      float* dk = b.input<float>("dk", n * hd, seed + 3, 1.f);
      // The model's backward: from the statistics its forward kept (ratio != 4; ratio 4 keeps none).
      const int64_t sw = compressor_stats_width(r, hd);
      float* st = nullptr;
      if (sw > 0) {
        std::vector<float> stats(size_t(n * sw)), k(size_t(n * hd));
        kv_compress_forward_keeping_stats(kt, zt, ape, k.data(), stats.data(), s, hd, r, pool);
        st = b.input_values<float>("stats", stats);
      }
      auto [dkt, dktr] = b.output<float>("dkt", s * C, 1e-4);
      auto [dzt, dztr] = b.output<float>("dzt", s * C, 1e-4);
      auto [dape, daper] = b.output<float>("dape", ratio * C, 1e-4);
      out.push_back(b.done(in_bytes + 4.0 * double(n * hd + n * sw) + 4.0 * double(2 * s * C + ratio * C), 0,
          [=] { kv_compress_backward_from_stats(kt, zt, ape, st, dk, dkt, dzt, dape, s, hd, r, pool); },
          [=] { kv_compress_backward_ref(kt, zt, ape, dk, dktr, dztr, daper, s, hd, r, pool); }));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------- sparse attention
struct AttnDims {
  int64_t s, H, hd, win;
  int ratio;
  int64_t k;
};

// Distinct visible entries per query, min(k, v_t) of them, seeded (what the indexer selects).
std::vector<int32_t> topk_like(int64_t s, int64_t k, int ratio, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> idx(static_cast<size_t>(s * k), -1);
  std::vector<int32_t> all;
  for (int64_t t = 0; t < s; ++t) {
    int64_t v = (t + 1) / ratio;
    all.resize(size_t(v));
    std::iota(all.begin(), all.end(), 0);
    for (int64_t c = 0; c < std::min(k, v); ++c) {
      int64_t j = c + int64_t(rng() % uint32_t(v - c));
      std::swap(all[size_t(c)], all[size_t(j)]);
      idx[size_t(t * k + c)] = all[size_t(c)];
    }
  }
  return idx;
}

std::vector<AttnDims> attention_shapes(SuiteSize size) {
  if (size == SuiteSize::kCheck) return {{23, 3, 16, 8, 4, 4}, {300, 2, 12, 32, 128, 0}, {17, 2, 33, 4, 0, 0}};
  if (size == SuiteSize::kQuick) return {{128, 4, 64, 32, 4, 8}};
  return {{512, 16, 512, 128, 4, 64}};
}

template <class T>
std::vector<KernelCase> attention_cases(bool bwd, const std::vector<AttnDims>& shapes, uint32_t seed,
                                        core::ThreadPool* pool) {
  std::vector<KernelCase> out;
  for (const AttnDims& a : shapes) {
    SparseAttnShape sh;
    sh.s = a.s;
    sh.heads = a.H;
    sh.hd = a.hd;
    sh.window = a.win;
    sh.n_comp = a.ratio ? a.s / a.ratio : 0;
    std::vector<int32_t> idxv;
    if (a.ratio == 4) {
      sh.k_comp = a.k;
      idxv = topk_like(a.s, a.k, 4, seed + 9);
    } else if (a.ratio == 128) {
      idxv = sparse_attention_dense_index(a.s, 128, sh.n_comp, &sh.k_comp);
    }
    std::string shape = "s " + std::to_string(a.s) + " H " + std::to_string(a.H) + " hd " +
                        std::to_string(a.hd) + " win " + std::to_string(a.win) +
                        (a.ratio == 4 ? " top-" + std::to_string(a.k) + " of ratio 4"
                                      : a.ratio ? " ratio " + std::to_string(a.ratio) : "");
    Builder b(bwd ? "sparse_attention.bwd" : "sparse_attention.fwd", dtype_name<T>(), shape);
    const double tol = tol_of(dtype_name<T>());
    const int64_t nq = a.s * a.H * a.hd;
    T* q = b.input<T>("q", nq, seed, 1.5f, int(seed % 3));
    T* kv = b.input<T>("kv", a.s * a.hd, seed + 1, 1.f);
    T* kc = b.input<T>("kv_comp", sh.n_comp * a.hd, seed + 2, 1.f);
    float* sink = b.input<float>("sink", a.H, seed + 3, 1.f);
    int32_t* idx = b.input_values<int32_t>("comp_idx", idxv);
    // Keys actually attended: sum over queries of the window plus the used compressed slots.
    double keys = 0;
    for (int64_t t = 0; t < a.s; ++t) {
      keys += double(std::min(a.win, t + 1));
      for (int64_t c = 0; c < sh.k_comp; ++c) keys += idx[t * sh.k_comp + c] >= 0 ? 1 : 0;
    }
    const double io = double(sizeof(T)) * double(2 * nq + a.s * a.hd + sh.n_comp * a.hd);
    if (!bwd) {
      auto [o, orf] = b.output<T>("o", nq, tol);
      auto [lse, lser] = b.output<float>("lse", a.s * a.H, 1e-4);
      out.push_back(b.done(io, 4.0 * double(a.H * a.hd) * keys,
          [=] { sparse_attention_forward(q, kv, kc, idx, sink, o, lse, nullptr, sh, pool); },
          [=] { sparse_attention_forward_ref(q, kv, kc, idx, sink, orf, lser, nullptr, sh, pool); }));
    } else {
      // The forward's lse is an input of the backward (its o is not: D comes from P and dP).
      T* o = b.scratch<T>(nq);
      float* lse = b.scratch<float>(a.s * a.H);
      sparse_attention_forward(q, kv, kc, idx, sink, o, lse, nullptr, sh, pool);
      float* lsei = b.input_values<float>("lse", std::vector<float>(lse, lse + a.s * a.H));
      T* d_o = b.input<T>("do", nq, seed + 4, 1.f);
      auto [dq, dqr] = b.output<T>("dq", nq, tol);
      auto [dkv, dkvr] = b.output<T>("dkv", a.s * a.hd, tol);
      auto [dkc, dkcr] = b.output<T>("dkv_comp", sh.n_comp * a.hd, tol);
      // dsink is fp32 in both, and both take D from their fp32 P and dP (the reference took it
      // from o rounded to bf16 before session 21, 1.4e-2 off an fp64 gradient at bf16).
      auto [ds, dsr] = b.output<float>("dsink", a.H, 1e-3);
      float* ws = b.scratch<float>(sparse_attention_backward_workspace(sh));
      out.push_back(b.done(2 * io, 10.0 * double(a.H * a.hd) * keys,
          [=] {
            sparse_attention_backward(q, kv, kc, idx, sink, lsei, d_o, dq, dkv, dkc, ds, sh, ws, pool);
          },
          [=] {
            sparse_attention_backward_ref(q, kv, kc, idx, sink, lsei, d_o, dqr, dkvr, dkcr, dsr, sh, pool);
          }));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------- indexer
std::vector<IndexerShape> indexer_shapes(SuiteSize size) {
  if (size == SuiteSize::kCheck) return {{37, 3, 5, 9, 4, 4}, {64, 4, 16, 16, 6, 4}, {50, 1, 33, 12, 20, 4}};
  if (size == SuiteSize::kQuick) return {{256, 4, 32, 64, 16, 4}};
  return {{2048, 16, 128, 512, 128, 4}};
}

std::string indexer_shape_text(const IndexerShape& sh) {
  return "s " + std::to_string(sh.s) + " IH " + std::to_string(sh.heads) + " Ihd " +
         std::to_string(sh.hd) + " entries " + std::to_string(sh.n_comp) + " top-" +
         std::to_string(sh.top_k);
}

double visible_pairs(const IndexerShape& sh) {
  double v = 0;
  for (int64_t t = 0; t < sh.s; ++t) v += double(std::min<int64_t>(sh.n_comp, (t + 1) / sh.ratio));
  return v;
}

std::vector<KernelCase> indexer_select_cases(SuiteSize size, uint32_t seed, core::ThreadPool* pool) {
  std::vector<KernelCase> out;
  for (const IndexerShape& sh : indexer_shapes(size)) {
    Builder b("indexer.select", "bf16", indexer_shape_text(sh));
    bf16* q = b.input<bf16>("qI", sh.s * sh.heads * sh.hd, seed, 1.f, int(seed % 3));
    bf16* k = b.input<bf16>("kI", sh.n_comp * sh.hd, seed + 1, 1.f);
    float* w = b.input<float>("w", sh.s * sh.heads, seed + 2, 0.3f);
    // Indices may legitimately differ at near-ties (the two sides sum in different orders);
    // the selected scores, slot by slot, are what must agree.
    auto [idx, idxr] = b.output<int32_t>("idx", sh.s * sh.top_k, 0, nullptr, false);
    auto [top, topr] = b.output<float>("top", sh.s * sh.top_k, 1e-4);
    float* I = b.scratch<float>(sh.s * sh.n_comp);
    IndexerShape shc = sh;
    out.push_back(b.done(2.0 * double(sh.s * sh.heads * sh.hd + sh.n_comp * sh.hd) +
                             8.0 * double(sh.s * sh.top_k),
                         2.0 * double(sh.heads * sh.hd) * visible_pairs(sh),
        [=] { indexer_select(q, k, w, idx, top, shc, pool); },
        [=] {
          indexer_scores_ref(q, k, w, I, shc, pool);
          indexer_topk_ref(I, idxr, topr, shc);
        }));
  }
  return out;
}

std::vector<KernelCase> indexer_kl_cases(SuiteSize size, uint32_t seed, core::ThreadPool* pool) {
  std::vector<KernelCase> out;
  for (const IndexerShape& sh : indexer_shapes(size)) {
    Builder b("indexer.kl_bwd", "bf16", indexer_shape_text(sh));
    const double tol = 1e-2;
    bf16* q = b.input<bf16>("qI", sh.s * sh.heads * sh.hd, seed, 1.f, int(seed % 3));
    bf16* k = b.input<bf16>("kI", sh.n_comp * sh.hd, seed + 1, 1.f);
    float* w = b.input<float>("w", sh.s * sh.heads, seed + 2, 0.3f);
    std::vector<int32_t> idxv(static_cast<size_t>(sh.s * sh.top_k));
    std::vector<float> topv(idxv.size());
    indexer_select(q, k, w, idxv.data(), topv.data(), sh, pool);
    int32_t* idx = b.input_values<int32_t>("idx", idxv);
    std::vector<float> tv(idxv.size());
    for (size_t i = 0; i < tv.size(); ++i) tv[i] = 0.05f + std::fabs(hash_unit(i, seed + 3));
    float* teacher = b.input_values<float>("teacher", tv);
    auto [dq, dqr] = b.output<bf16>("dqI", sh.s * sh.heads * sh.hd, tol);
    auto [dk, dkr] = b.output<bf16>("dkI", sh.n_comp * sh.hd, tol);
    auto [dw, dwr] = b.output<float>("dw", sh.s * sh.heads, 1e-3);
    auto [L, Lr] = b.output<float>("loss", 1, 1e-4);
    float* ws = b.scratch<float>(indexer_kl_workspace(sh));
    IndexerShape shc = sh;
    const double sel = double(sh.s * sh.top_k);
    out.push_back(b.done(4.0 * double(sh.s * sh.heads * sh.hd + sh.n_comp * sh.hd) + 8.0 * sel,
                         6.0 * double(sh.heads * sh.hd) * sel,
        [=] { *L = float(indexer_kl_backward(q, k, w, idx, teacher, 1.f, dq, dk, dw, shc, ws, pool)); },
        [=] { *Lr = float(indexer_kl_backward_ref(q, k, w, idx, teacher, 1.f, dqr, dkr, dwr, shc, pool)); }));
  }
  return out;
}

// ---------------------------------------------------------------------------- mHC
std::vector<MhcShape> mhc_shapes(SuiteSize size) {
  auto mk = [](int64_t tokens, int64_t d) {
    MhcShape s;
    s.tokens = tokens;
    s.d = d;
    return s;
  };
  if (size == SuiteSize::kCheck) return {mk(5, 7), mk(17, 64), mk(3, 33)};
  if (size == SuiteSize::kQuick) return {mk(256, 256)};
  return {mk(4096, 1024)};
}

// T: the activations' type (X, y, F, G, dX, dF); the gates, coefficients and parameter
// gradients are fp32 in both. The model trains in fp32, the bf16 cases are the mixed-precision
// layout.
template <class T>
void mhc_cases(const std::string& which, const std::vector<MhcShape>& shapes, uint32_t seed,
               core::ThreadPool* pool, std::vector<KernelCase>& out) {
  const double es = double(sizeof(T));
  const double tol = tol_of(dtype_name<T>());
  for (const MhcShape& sh : shapes) {
    Builder b(which, dtype_name<T>(), dims({sh.tokens, sh.n, sh.d}) + " T " + std::to_string(sh.iters));
    const int64_t tok = sh.tokens, n = sh.n, d = sh.d, nd = n * d, R = sh.rows();
    T* X = b.input<T>("X", tok * nd, seed, 1.f, int(seed % 3));
    const double xb = es * double(tok * nd);
    if (which == "mhc.head_fwd" || which == "mhc.head_bwd") {
      float* phi = b.input<float>("phi_h", n * nd, seed + 1, 1.7f / std::sqrt(float(nd)));
      float* bias = b.input<float>("b", n, seed + 2, 0.5f);
      const float scale = 1.3f;
      if (which == "mhc.head_fwd") {
        auto [y, yr] = b.output<T>("y", tok * d, tol);
        auto [w, wr] = b.output<float>("w", tok * n, 1e-4);
        // The model's forward: it saves the projections and squares its backward reads (mhc.h
        // proj; a scratch the gate does not compare, counted among the bytes written).
        float* proj = b.scratch<float>(mhc_head_proj_floats(sh));
        out.push_back(b.done(xb + 4.0 * double(n * nd) + es * double(tok * d) + 4.0 * double(mhc_head_proj_floats(sh)),
                             2.0 * double(tok) * double(n * nd + nd),
            [=] { mhc_head_forward(X, phi, bias, scale, y, w, sh, pool, proj); },
            [=] { mhc_head_forward_ref(X, phi, bias, scale, yr, wr, sh, pool); }));
      } else {
        T* dy = b.input<T>("dy", tok * d, seed + 3, 1.f);
        // What the model's head runs (transformer.cc): dX overwritten (MhcGradInto::kOverwrite),
        // never read, in a 64-byte aligned buffer (the suite's allocations are), so the kernel
        // writes it by streaming stores; the fused dX starts poisoned, so a line it leaves
        // unwritten fails the gate. The reference adds (its only mode): it starts from zeros,
        // which the overwrite's contract equals (mhc.h). dX is counted once, written.
        const int64_t ndx = tok * nd;
        auto [dX, dXr] = b.output<T>("dX", ndx, tol);
        auto [dphi, dphir] = b.output<float>("dphi", n * nd, 1e-3);
        auto [db, dbr] = b.output<float>("db", n, 1e-3);
        auto [ds, dsr] = b.output<float>("dscale", 1, 1e-3);
        float* ws = b.scratch<float>(mhc_head_backward_workspace(sh));
        // The forward's projections and squares, as the model's head passes them (mhc.h proj).
        float* proj = b.scratch<float>(mhc_head_proj_floats(sh));
        {
          std::vector<T> y(static_cast<size_t>(tok * d));
          std::vector<float> w(static_cast<size_t>(tok * n));
          mhc_head_forward(X, phi, bias, scale, y.data(), w.data(), sh, pool, proj);
        }
        out.push_back(b.done(2 * xb + 8.0 * double(n * nd) + es * double(tok * d) +
                                 4.0 * double(mhc_head_proj_floats(sh)),
                             6.0 * double(tok) * double(n * nd),
            [=] {
              mhc_head_backward(X, phi, bias, scale, dy, dX, dphi, db, ds, sh, ws, pool, proj,
                                MhcGradInto::kOverwrite);
            },
            [=] {
              std::fill(dXr, dXr + ndx, from<T>(0.f));
              mhc_head_backward_ref(X, phi, bias, scale, dy, dXr, dphir, dbr, dsr, sh, pool);
            }));
      }
    } else if (which == "mhc.pre_fwd" || which == "mhc.pre_bwd") {
      float* phi = b.input<float>("phi", R * nd, seed + 1, 1.7f / std::sqrt(float(nd)));
      float* bias = b.input<float>("b", R, seed + 2, 0.5f);
      float* scale = b.input_values<float>("scale", {1.2f, 0.8f, 1.5f});
      const double pb = 4.0 * double(R * nd);
      if (which == "mhc.pre_fwd") {
        auto [y, yr] = b.output<T>("y", tok * d, tol);
        auto [pre, prer] = b.output<float>("pre", tok * n, 1e-4);
        auto [post, postr] = b.output<float>("post", tok * n, 1e-4);
        auto [C, Cr] = b.output<float>("C", tok * n * n, 1e-4);
        out.push_back(b.done(xb + pb + es * double(tok * d), 2.0 * double(tok) * double(R * nd + nd),
            [=] { mhc_pre_forward(X, phi, bias, scale, y, pre, post, C, sh, pool); },
            [=] { mhc_pre_forward_ref(X, phi, bias, scale, yr, prer, postr, Cr, sh, pool); }));
      } else {
        T* dy = b.input<T>("dy", tok * d, seed + 3, 1.f);
        float* dpost = b.input<float>("dpost", tok * n, seed + 4, 1.f);
        float* dC = b.input<float>("dC", tok * n * n, seed + 5, 1.f);
        std::vector<T> dx0(static_cast<size_t>(tok * nd));
        for (size_t i = 0; i < dx0.size(); ++i) dx0[i] = from<T>(hash_unit(i, seed + 6));
        auto [dX, dXr] = b.output<T>("dX", tok * nd, tol, dx0.data());
        auto [dphi, dphir] = b.output<float>("dphi", R * nd, 1e-3);
        auto [db, dbr] = b.output<float>("db", R, 1e-3);
        auto [ds, dsr] = b.output<float>("dscale", 3, 1e-3);
        float* ws = b.scratch<float>(mhc_pre_backward_workspace(sh));
        out.push_back(b.done(2 * xb + 2 * pb + es * double(tok * d), 6.0 * double(tok) * double(R * nd),
            [=] { mhc_pre_backward(X, phi, bias, scale, dy, dpost, dC, dX, dphi, db, ds, sh, ws, pool); },
            [=] { mhc_pre_backward_ref(X, phi, bias, scale, dy, dpost, dC, dXr, dphir, dbr, dsr, sh, pool); }));
      }
    } else {
      T* F = b.input<T>("F", tok * d, seed + 7, 1.f);
      float* post = b.input<float>("post", tok * n, seed + 8, 1.f);
      float* C = b.input<float>("C", tok * n * n, seed + 9, 0.5f);
      if (which == "mhc.post_fwd") {
        auto [o, orf] = b.output<T>("out", tok * nd, tol);
        out.push_back(b.done(2 * xb + es * double(tok * d), 2.0 * double(tok) * double(n * (n + 1) * d),
            [=] { mhc_post_forward(F, X, post, C, o, sh, pool); },
            [=] { mhc_post_forward_ref(F, X, post, C, orf, sh, pool); }));
      } else {
        T* G = b.input<T>("G", tok * nd, seed + 10, 1.f);
        auto [dF, dFr] = b.output<T>("dF", tok * d, tol);
        auto [dX, dXr] = b.output<T>("dX", tok * nd, tol);
        auto [dpo, dpor] = b.output<float>("dpost", tok * n, 1e-4);
        auto [dC, dCr] = b.output<float>("dC", tok * n * n, 1e-4);
        out.push_back(b.done(3 * xb + 2.0 * es * double(tok * d), 4.0 * double(tok) * double(n * (n + 1) * d),
            [=] { mhc_post_backward(G, F, X, post, C, dF, dX, dpo, dC, sh, pool); },
            [=] { mhc_post_backward_ref(G, F, X, post, C, dFr, dXr, dpor, dCr, sh, pool); }));
      }
    }
  }
}

std::vector<KernelCase> mhc_cases(const std::string& which, const std::vector<MhcShape>& shapes,
                                  uint32_t seed, core::ThreadPool* pool) {
  std::vector<KernelCase> out;
  mhc_cases<float>(which, shapes, seed, pool, out);
  mhc_cases<bf16>(which, shapes, seed, pool, out);
  return out;
}

// ---------------------------------------------------------------------------- casts
// The model's dtype casts (memory-bound): core's SIMD conversion split over the pool in fixed
// chunks, against the portable scalar conversion (one element at a time, one thread). An output
// of at least the row kernels' streaming size (builtin::streams_by_size) is written with
// streaming stores (core/bf16_stream.h), the row kernels' rule by the whole output's size.
std::vector<KernelCase> cast_cases(bool to_bf16, SuiteSize size, uint32_t seed, core::ThreadPool* pool) {
  std::vector<int64_t> sizes;
  if (size == SuiteSize::kCheck) sizes = {1, 7, 1000, 4099};
  else if (size == SuiteSize::kQuick) sizes = {int64_t(1) << 20};
  else sizes = {int64_t(1) << 25};
  std::vector<KernelCase> out;
  core::ThreadPool* tp = &core::pool_or_default(pool);
  for (int64_t n : sizes) {
    Builder b(to_bf16 ? "cast.fp32_to_bf16" : "cast.bf16_to_fp32", to_bf16 ? "bf16" : "fp32", dims({n}));
    if (to_bf16) {
      float* x = b.input<float>("x", n, seed, 3.f, int(seed % 3));
      auto [y, yr] = b.output<bf16>("y", n, 0);
      const bool nt = builtin::streams_by_size(n * int64_t(sizeof(bf16)));
      out.push_back(b.done(6.0 * double(n), 0,
          [=] {
            tp->parallel_for(0, n, 1 << 16, [=](int64_t lo, int64_t hi) {
              if (nt) core::fp32_to_bf16_stream(x + lo, y + lo, size_t(hi - lo));
              else core::fp32_to_bf16(x + lo, y + lo, size_t(hi - lo));
            });
          },
          [=] { core::fp32_to_bf16_scalar(x, yr, size_t(n)); }));
    } else {
      bf16* x = b.input<bf16>("x", n, seed, 3.f, int(seed % 3));
      auto [y, yr] = b.output<float>("y", n, 0);
      const bool nt = builtin::streams_by_size(n * int64_t(sizeof(float)));
      out.push_back(b.done(6.0 * double(n), 0,
          [=] {
            tp->parallel_for(0, n, 1 << 16, [=](int64_t lo, int64_t hi) {
              if (nt) core::bf16_to_fp32_stream(x + lo, y + lo, size_t(hi - lo));
              else core::bf16_to_fp32(x + lo, y + lo, size_t(hi - lo));
            });
          },
          [=] { core::bf16_to_fp32_scalar(x, yr, size_t(n)); }));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------- AdamW
std::vector<KernelCase> adamw_cases(SuiteSize size, uint32_t seed, core::ThreadPool* pool) {
  std::vector<int64_t> sizes;
  if (size == SuiteSize::kCheck) sizes = {1000, 4097};
  else if (size == SuiteSize::kQuick) sizes = {int64_t(1) << 18};
  else sizes = {int64_t(1) << 24};
  std::vector<KernelCase> out;
  for (int64_t n : sizes) {
    Builder b("adamw", "fp32", dims({n}));
    float* g = b.input<float>("g", n, seed, 1e-2f, int(seed % 3));
    std::vector<float> th(static_cast<size_t>(n)), mm(th.size()), vv(th.size());
    for (size_t i = 0; i < th.size(); ++i) {
      th[i] = hash_unit(i, seed + 1);
      mm[i] = 1e-3f * hash_unit(i, seed + 2);
      vv[i] = 1e-5f * std::fabs(hash_unit(i, seed + 3));
    }
    // theta, m, v are updated in place (declared in-place outputs: reset before each run).
    auto [t, tr] = b.output<float>("theta", n, 1e-5, th.data());
    auto [m, mr] = b.output<float>("m", n, 1e-5, mm.data());
    auto [v, vr] = b.output<float>("v", n, 1e-5, vv.data());
    auto [w, wr] = b.output<bf16>("w", n, 1e-2);
    AdamWScalars s = adamw_scalars(AdamWHyper{}, 10);
    out.push_back(b.done(double(n) * (4 * 4 + 3 * 4 + 2), 0,
        [=] { adamw_update(s, t, m, v, g, w, n, pool); },
        [=] { adamw_update_ref(s, tr, mr, vr, g, wr, n, pool); }));
  }
  return out;
}

}  // namespace

const std::vector<std::string>& suite_kernels() {
  static const std::vector<std::string> names = {
      "gemm",           "rmsnorm.fwd",       "rmsnorm.bwd",          "swiglu.fwd",
      "swiglu.bwd",     "rope.fwd",          "cross_entropy",        "kv_compress.fwd",
      "kv_compress.bwd", "sparse_attention.fwd", "sparse_attention.bwd", "indexer.select",
      "indexer.kl_bwd", "mhc.pre_fwd",       "mhc.pre_bwd",          "mhc.post_fwd",
      "mhc.post_bwd",   "mhc.head_fwd",      "mhc.head_bwd",         "cast.fp32_to_bf16",
      "cast.bf16_to_fp32", "adamw"};
  return names;
}

std::vector<KernelCase> make_cases(const std::string& kernel, SuiteSize size, uint32_t seed,
                                   core::ThreadPool* pool) {
  std::vector<KernelCase> out;
  if (kernel == "gemm") return gemm_cases(gemm_shapes(size), seed, pool);
  if (kernel == "rmsnorm.fwd" || kernel == "rmsnorm.bwd") {
    bool bwd = kernel == "rmsnorm.bwd";
    rmsnorm_cases<float>(bwd, rows_cols(size), seed, pool, out);
    rmsnorm_cases<bf16>(bwd, rows_cols(size), seed, pool, out);
    return out;
  }
  if (kernel == "swiglu.fwd" || kernel == "swiglu.bwd") {
    bool bwd = kernel == "swiglu.bwd";
    swiglu_cases<float>(bwd, rows_cols(size), seed, pool, out);
    swiglu_cases<bf16>(bwd, rows_cols(size), seed, pool, out);
    return out;
  }
  if (kernel == "rope.fwd") {
    rope_cases<float>(rope_shapes(size), seed, pool, out);
    rope_cases<bf16>(rope_shapes(size), seed, pool, out);
    return out;
  }
  if (kernel == "cross_entropy") return cross_entropy_cases(cross_entropy_shapes(size), seed, pool);
  if (kernel == "kv_compress.fwd") return compressor_cases(false, compressor_shapes(size), seed, pool);
  if (kernel == "kv_compress.bwd") return compressor_cases(true, compressor_shapes(size), seed, pool);
  if (kernel == "sparse_attention.fwd" || kernel == "sparse_attention.bwd") {
    bool bwd = kernel == "sparse_attention.bwd";
    out = attention_cases<float>(bwd, attention_shapes(size), seed, pool);
    if (size == SuiteSize::kCheck)
      for (KernelCase& c : attention_cases<bf16>(bwd, attention_shapes(size), seed, pool)) out.push_back(std::move(c));
    return out;
  }
  if (kernel == "indexer.select") return indexer_select_cases(size, seed, pool);
  if (kernel == "indexer.kl_bwd") return indexer_kl_cases(size, seed, pool);
  if (kernel == "mhc.pre_fwd" || kernel == "mhc.pre_bwd" || kernel == "mhc.post_fwd" ||
      kernel == "mhc.post_bwd" || kernel == "mhc.head_fwd" || kernel == "mhc.head_bwd")
    return mhc_cases(kernel, mhc_shapes(size), seed, pool);
  if (kernel == "cast.fp32_to_bf16") return cast_cases(true, size, seed, pool);
  if (kernel == "cast.bf16_to_fp32") return cast_cases(false, size, seed, pool);
  if (kernel == "adamw") return adamw_cases(size, seed, pool);
  throw std::invalid_argument("unknown kernel '" + kernel + "'");
}

std::vector<KernelCase> make_cases_at(const std::string& kernel, const std::vector<int64_t>& d,
                                      uint32_t seed, core::ThreadPool* pool) {
  std::vector<KernelCase> out;
  auto need = [&](size_t n) {
    if (d.size() != n) throw std::invalid_argument(kernel + ": expected " + std::to_string(n) + " dimensions");
    for (int64_t v : d)
      if (v < 1) throw std::invalid_argument(kernel + ": dimensions must be >= 1");
  };
  if (kernel == "gemm") {
    need(3);
    return gemm_cases({{d[0], d[1], d[2]}}, seed, pool);
  }
  if (kernel == "rmsnorm.fwd" || kernel == "rmsnorm.bwd") {
    need(2);
    rmsnorm_cases<float>(kernel == "rmsnorm.bwd", {{d[0], d[1]}}, seed, pool, out);
    rmsnorm_cases<bf16>(kernel == "rmsnorm.bwd", {{d[0], d[1]}}, seed, pool, out);
    return out;
  }
  if (kernel == "swiglu.fwd" || kernel == "swiglu.bwd") {
    need(2);
    swiglu_cases<float>(kernel == "swiglu.bwd", {{d[0], d[1]}}, seed, pool, out);
    swiglu_cases<bf16>(kernel == "swiglu.bwd", {{d[0], d[1]}}, seed, pool, out);
    return out;
  }
  if (kernel == "cross_entropy") {
    need(2);
    return cross_entropy_cases({{d[0], d[1]}}, seed, pool);
  }
  if (kernel == "rope.fwd") {  // tokens, heads, head_dim; rotary on min(64, head_dim) dims
    need(3);
    const int64_t rd = std::max<int64_t>(2, std::min<int64_t>(64, d[2]) / 2 * 2);
    if (d[2] < 2) throw std::invalid_argument(kernel + ": head_dim must be >= 2");
    rope_cases<float>({{d[0], d[1], d[2], rd}}, seed, pool, out);
    rope_cases<bf16>({{d[0], d[1], d[2], rd}}, seed, pool, out);
    return out;
  }
  if (kernel == "kv_compress.fwd" || kernel == "kv_compress.bwd") {  // tokens, head_dim, ratio
    need(3);
    if (d[2] > 1024) throw std::invalid_argument(kernel + ": ratio must be <= 1024");
    return compressor_cases(kernel == "kv_compress.bwd", {{d[0], d[1], d[2]}}, seed, pool);
  }
  if (kernel == "sparse_attention.fwd" || kernel == "sparse_attention.bwd") {
    // tokens, heads, head_dim[, ratio]; window 64 and the model's layers by ratio: 4 (the
    // default) CSA, the top-64 of the ratio-4 entries; 128 HCA, every visible entry; 0 the window.
    // The kernels' tuning lookup has no ratio: `trex aura tune` times each kind of layer under
    // the one entry that serves all three.
    if (d.size() != 3 && d.size() != 4)
      throw std::invalid_argument(kernel + ": expected 3 or 4 dimensions");
    for (size_t i = 0; i < 3; ++i)
      if (d[i] < 1) throw std::invalid_argument(kernel + ": dimensions must be >= 1");
    const int ratio = d.size() == 4 ? int(d[3]) : 4;
    if (ratio != 0 && ratio != 4 && ratio != 128)
      throw std::invalid_argument(kernel + ": ratio must be 0, 4 or 128");
    const bool bwd = kernel == "sparse_attention.bwd";
    const int64_t top = ratio == 4 ? std::min<int64_t>(64, std::max<int64_t>(1, d[0] / 4)) : 0;
    const std::vector<AttnDims> a = {{d[0], d[1], d[2], 64, ratio, top}};
    out = attention_cases<float>(bwd, a, seed, pool);
    for (KernelCase& c : attention_cases<bf16>(bwd, a, seed, pool)) out.push_back(std::move(c));
    return out;
  }
  if (kernel.rfind("mhc.", 0) == 0 && kernel != "mhc.sinkhorn") {  // tokens, streams, d
    need(3);
    if (d[1] > kMhcMaxStreams)
      throw std::invalid_argument(kernel + ": at most " + std::to_string(kMhcMaxStreams) + " streams");
    MhcShape sh;
    sh.tokens = d[0];
    sh.n = int(d[1]);
    sh.d = d[2];
    for (const std::string& k : suite_kernels())
      if (k == kernel) return mhc_cases(kernel, {sh}, seed, pool);
  }
  throw std::invalid_argument("no cases at a chosen shape for kernel '" + kernel + "'");
}

}  // namespace trex::kernels
