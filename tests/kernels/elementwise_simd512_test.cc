// elementwise_simd512.h's bf16 roundings: round16 (integer) and round16_cvt (the CPU's
// vcvtneps2bf16 with a fallback for denormal steps) against core::to_bf16, bit for bit, over a
// stride through every fp32 bit pattern and the special values (signed zeros, denormals, the
// largest denormal and smallest normal, ties, values rounding up to infinity, infinities, quiet
// and signalling NaNs), each also placed beside normal lanes of the same 16-lane step.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "trex/core/bf16.h"
#include "trex/core/cpu_features.h"
#include "trex/kernels/elementwise_simd512.h"

namespace trex::kernels {
namespace {

float bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<uint32_t> patterns() {
  std::vector<uint32_t> v;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 65521) v.push_back(uint32_t(u));  // a prime stride
  for (uint32_t s : {0u, 0x80000000u})
    for (uint32_t u : {0x0u, 0x1u, 0x7fffu, 0x8000u, 0x8001u, 0x18000u, 0x7fffffu, 0x800000u,
                       0x807fffu, 0x808000u, 0x818000u, 0x3f808000u, 0x3f818000u, 0x7f7f8000u,
                       0x7f7fffffu, 0x7f800000u, 0x7f800001u, 0x7fa00000u, 0x7fc00000u,
                       0x7fffffffu})
      v.push_back(s | u);
  return v;
}

template <class Round>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,avx512bf16"))) void check(
    Round round, const char* name) {
  const std::vector<uint32_t> pats = patterns();
  // Each pattern once in lane i of a step of normal values, once in a step of its own kind.
  for (size_t k = 0; k < pats.size(); ++k) {
    alignas(64) float in[16];
    for (int l = 0; l < 16; ++l) in[l] = 1.f + float(l) / 7.f;
    in[k % 16] = bits(pats[k]);
    alignas(64) float same[16];
    for (int l = 0; l < 16; ++l) same[l] = bits(pats[(k + size_t(l) * 977) % pats.size()]);
    for (const float* step : {static_cast<const float*>(in), static_cast<const float*>(same)}) {
      alignas(32) uint16_t out[16];
      _mm256_store_si256(reinterpret_cast<__m256i*>(out), round(_mm512_load_ps(step)));
      for (int l = 0; l < 16; ++l) {
        uint32_t u;
        std::memcpy(&u, &step[l], 4);
        ASSERT_EQ(out[l], core::to_bf16(step[l]).bits)
            << name << ": input bits 0x" << std::hex << u;
      }
    }
  }
}

// A line's store (lo = elements 0-15, hi = 16-31; the NT form's streaming stores need the
// line 32-byte aligned) against core::to_bf16 for every pattern, in each of the line's 32
// positions in turn, in lines of every kind the store's tests tell apart: all normal (no +-0
// word after the conversion), normal with a +0 and a -0 word but no denormal, a denormal in the
// other half than the pattern (lo or hi), and a line of patterns only.
template <class Store>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,avx512bf16"))) void check32(
    Store store, const char* name) {
  const std::vector<uint32_t> pats = patterns();
  for (size_t k = 0; k < pats.size(); ++k) {
    const size_t at = k % 32;
    alignas(64) float lines[5][32];
    for (int kind = 0; kind < 5; ++kind)
      for (int l = 0; l < 32; ++l) lines[kind][l] = 1.f + float(l) / 7.f;
    const size_t other = (at + 16) % 32, other2 = (at + 17) % 32;
    lines[1][other] = 0.f, lines[1][other2] = -0.f;
    lines[2][other] = bits(0x1u);                // a denormal that rounds to +0
    lines[3][other] = bits(0x807fffffu);         // one that rounds to -(the smallest normal)
    lines[3][other2] = bits(0x0001c000u);        // one that stays a bf16 denormal
    for (int l = 0; l < 32; ++l) lines[4][l] = bits(pats[(k + size_t(l) * 977) % pats.size()]);
    for (int kind = 0; kind < 4; ++kind) lines[kind][at] = bits(pats[k]);
    for (const auto& line : lines) {
      alignas(64) uint16_t out[32];
      store(reinterpret_cast<core::bf16*>(out), _mm512_load_ps(line), _mm512_load_ps(line + 16));
      for (int l = 0; l < 32; ++l) {
        uint32_t u;
        std::memcpy(&u, &line[l], 4);
        ASSERT_EQ(out[l], core::to_bf16(line[l]).bits)
            << name << ": input bits 0x" << std::hex << u << " at " << std::dec << l;
      }
    }
  }
}

TEST(ElementwiseSimd512, Bf16LineStoresMatchToBf16) {
  const core::CpuFeatures& f = core::cpu_features();
  if (!f.avx512_bf16) GTEST_SKIP() << "no AVX512_BF16: store32 never runs here";
  check32([](core::bf16* p, __m512 lo, __m512 hi) { simd::store32<false>(p, lo, hi); },
          "store32");
  check32([](core::bf16* p, __m512 lo, __m512 hi) { simd::store32<true>(p, lo, hi); },
          "store32 NT");
  // store32_split takes the line's even and odd elements (load32_split's order).
  const auto split = [](core::bf16* p, __m512 lo, __m512 hi, auto store) {
    alignas(64) int32_t ev[16], od[16];
    for (int k = 0; k < 16; ++k) ev[k] = 2 * k, od[k] = 2 * k + 1;
    store(p, _mm512_permutex2var_ps(lo, _mm512_load_si512(ev), hi),
          _mm512_permutex2var_ps(lo, _mm512_load_si512(od), hi), simd::split_index());
  };
  using simd::LineStore;
  check32([&](core::bf16* p, __m512 lo, __m512 hi) {
    split(p, lo, hi, [](core::bf16* q, __m512 e, __m512 o, __m512i i) { simd::store32_split<LineStore::kPlain>(q, e, o, i); });
  }, "store32_split");
  check32([&](core::bf16* p, __m512 lo, __m512 hi) {
    split(p, lo, hi, [](core::bf16* q, __m512 e, __m512 o, __m512i i) { simd::store32_split<LineStore::kStream32>(q, e, o, i); });
  }, "store32_split NT 32");
  check32([&](core::bf16* p, __m512 lo, __m512 hi) {  // check32's lines are 64-byte aligned
    split(p, lo, hi, [](core::bf16* q, __m512 e, __m512 o, __m512i i) { simd::store32_split<LineStore::kStream64>(q, e, o, i); });
  }, "store32_split NT 64");
  // The SwiGLU backward's form: one denormal test over two lines (here the line and a line of
  // zeros), words32 by the conversion or by round16, the permute, put_line.
  check32([&](core::bf16* p, __m512 lo, __m512 hi) {
    split(p, lo, hi, [](core::bf16* q, __m512 e, __m512 o, __m512i i)
                         __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,avx512bf16"))) {
      const __m512 z = _mm512_setzero_ps();
      const __m512i h = _kortestz_mask16_u8(simd::denormal32(e, o), simd::denormal32(z, z))
                            ? simd::words32<true>(e, o)
                            : simd::words32<false>(e, o);
      simd::put_line<LineStore::kStream64>(q, _mm512_maskz_permutexvar_epi16(0xffffffffu, i, h));
    });
  }, "denormal32 + words32 + put_line");
}

// load32_split widens each bf16 word of a line exactly (elements 0, 2, .., 30 then 1, 3, .., 31),
// and store32_split of what it loaded gives the line back, for lines of every pattern above.
TEST(ElementwiseSimd512, Bf16LineSplitLoadRoundTrips) {
  if (!core::cpu_features().avx512_bf16) GTEST_SKIP() << "no AVX512_BF16: the split loads never run here";
  const std::vector<uint32_t> pats = patterns();
  for (size_t k = 0; k < pats.size(); ++k) {
    alignas(64) uint16_t line[32], back[32];
    for (int l = 0; l < 32; ++l) line[l] = uint16_t(pats[(k + size_t(l) * 977) % pats.size()] >> 16);
    [&]() __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,avx512bf16"))) {
      __m512 ev, od;
      simd::load32_split(reinterpret_cast<const core::bf16*>(line), &ev, &od);
      alignas(64) float e[16], o[16];
      _mm512_store_ps(e, ev);
      _mm512_store_ps(o, od);
      for (int j = 0; j < 16; ++j) {
        core::bf16 be, bo;
        be.bits = line[2 * j], bo.bits = line[2 * j + 1];
        uint32_t ue, uo, we, wo;
        const float fe = core::to_float(be), fo = core::to_float(bo);
        std::memcpy(&ue, &e[j], 4), std::memcpy(&uo, &o[j], 4);
        std::memcpy(&we, &fe, 4), std::memcpy(&wo, &fo, 4);
        ASSERT_EQ(ue, we) << "element " << 2 * j;
        ASSERT_EQ(uo, wo) << "element " << 2 * j + 1;
      }
      simd::store32_split<simd::LineStore::kPlain>(reinterpret_cast<core::bf16*>(back), ev, od,
                                                  simd::split_index());
    }();
    for (int l = 0; l < 32; ++l) {
      // A signalling NaN comes back quiet (core::to_bf16's rule), every other word unchanged.
      core::bf16 b;
      b.bits = line[l];
      ASSERT_EQ(back[l], core::to_bf16(core::to_float(b)).bits) << "word " << l << " 0x" << std::hex << line[l];
    }
  }
}

TEST(ElementwiseSimd512, Bf16RoundingsMatchToBf16) {
  const core::CpuFeatures& f = core::cpu_features();
  if (!(f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl))
    GTEST_SKIP() << "this CPU has no AVX-512 F/BW/DQ/VL: the 16-lane roundings never run here";
  check([](__m512 v) { return simd::round16(v); }, "round16");
  if (!f.avx512_bf16) GTEST_SKIP() << "no AVX512_BF16: round16_cvt never runs here";
  check([](__m512 v) { return simd::round16_cvt(v); }, "round16_cvt");
}

}  // namespace
}  // namespace trex::kernels
