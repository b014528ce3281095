// The building blocks of the reference ("eager") chains: each op writes a fresh temporary of
// the whole tensor, as an eager framework would, so the fused kernels are measured against
// the memory traffic they remove. Internal to src/trex/kernels/*_ref.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>

#include "trex/core/thread_pool.h"
#include "trex/kernels/elementwise_simd.h"

namespace trex::kernels::eager {

using Buf = std::unique_ptr<float[]>;

// Uninitialised on purpose: an eager framework's fresh tensor is not zeroed either.
inline Buf fresh(int64_t n) { return Buf(new float[size_t(n)]); }

// out[i] = f(i) for i < n: one eager elementwise op.
template <class F>
Buf map(core::ThreadPool& tp, int64_t n, F f) {
  Buf out = fresh(n);
  float* o = out.get();
  tp.parallel_for(0, n, 1 << 15, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) o[i] = f(i);
  });
  return out;
}

// x as fp32: itself, or an upcast copy kept alive by `owner` (the eager cast op).
template <class T>
const float* as_f32(core::ThreadPool& tp, const T* x, int64_t n, Buf& owner) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    owner = map(tp, n, [&](int64_t i) { return simd::ld(x + i); });
    return owner.get();
  }
}

// out = a cast to T (the eager cast back to the storage dtype).
template <class T>
void store_as(core::ThreadPool& tp, const float* a, T* out, int64_t n) {
  tp.parallel_for(0, n, 1 << 15, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) simd::st(out + i, a[i]);
  });
}

}  // namespace trex::kernels::eager
