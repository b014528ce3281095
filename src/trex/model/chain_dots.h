// Dot products of one query with many keys, each summed as one chain in element order, each
// product rounded to float before it is added (no fused multiply-add), but computed side by
// side: the keys are transposed so that the SIMD lanes run over keys, not over a key's elements.
// A compiler may not vectorize the chain itself (that would reorder its sum), so one key at a
// time runs at one add per FP latency; side by side the same adds fill whole vectors.
// Used by attention decoding (attention_decode.cc) for its scores and the indexer's.
//
// Why unfused: the loop it replaces, `float d = 0; for (e) d += q[e] * k[e];`, is what GCC 12
// at -O3 -march=native compiled to products rounded in vectors, then added one by one in order
// (its fold-left reduction), for every element count that is a multiple of 16 (every head and
// indexer width of configs/model/*.toml); only a remainder of fewer than 16 elements went
// through fused multiply-adds. Fused here (GCC contracts `out[j] += q * k` by default) the
// side-by-side sums would differ from those in the last bits. So a width that is not a multiple
// of 16 (the test models' indexer head dim 8, tests/model/tiny_config.h) has other bits than
// the old loop gave it (no fused products now); those models' outputs are only compared with
// themselves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace trex::model {

// kT [n, nk] = the nk keys of n elements each, transposed: kT[e * nk + j] = keys[j][e].
inline void transpose_keys(const float* const* keys, size_t nk, int64_t n, std::vector<float>& kT) {
  kT.resize(size_t(n) * nk);
  for (size_t j = 0; j < nk; ++j)
    for (int64_t e = 0; e < n; ++e) kT[size_t(e) * nk + j] = keys[j][e];
}

// out[j] = q[0] kT[j] + q[1] kT[nk + j] + ... in that order, each product rounded, for j < nk
// (out overwritten).
#if defined(__clang__)
inline void chain_dots(const float* q, int64_t n, const float* kT, size_t nk, float* out) {
#pragma clang fp contract(off)
#elif defined(__GNUC__)
__attribute__((optimize("fp-contract=off"))) inline void chain_dots(const float* q, int64_t n,
                                                                    const float* kT, size_t nk,
                                                                    float* out) {
#else
inline void chain_dots(const float* q, int64_t n, const float* kT, size_t nk, float* out) {
#endif
  for (size_t j = 0; j < nk; ++j) out[j] = 0.f;
  for (int64_t e = 0; e < n; ++e) {
    const float qe = q[e];
    const float* ke = kT + size_t(e) * nk;
    for (size_t j = 0; j < nk; ++j) out[j] += qe * ke[j];
  }
}

}  // namespace trex::model
