#include "trex/core/cpu_features.h"

#include <cpuid.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "trex/core/cpu_features_override.h"

namespace trex::core {

namespace {

struct Regs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Regs cpuid(unsigned leaf, unsigned subleaf = 0) {
  Regs r;
  if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) return Regs{};
  return r;
}

uint64_t xgetbv0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

bool bit(unsigned reg, int b) { return (reg >> b) & 1u; }

CpuFeatures detect() {
  CpuFeatures f;
  unsigned max_leaf = unsigned(__get_cpuid_max(0, nullptr));
  if (max_leaf < 1) return f;
  Regs l1 = cpuid(1);
  f.sse4_2 = bit(l1.ecx, 20);
  bool osxsave = bit(l1.ecx, 27);
  uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  // The OS saves XMM and YMM state (bits 1, 2); opmask, ZMM0-15 upper halves, ZMM16-31 (5-7);
  // AMX tile config and data (17, 18).
  bool os_ymm = (xcr0 & 0x6) == 0x6;
  bool os_zmm = os_ymm && (xcr0 & 0xe0) == 0xe0;
  bool os_amx = (xcr0 & 0x60000) == 0x60000;

  f.avx = os_ymm && bit(l1.ecx, 28);
  f.fma = os_ymm && bit(l1.ecx, 12);
  f.f16c = os_ymm && bit(l1.ecx, 29);
  if (max_leaf >= 7) {
    Regs l7 = cpuid(7, 0);
    Regs l7s1 = cpuid(7, 1);
    f.avx2 = os_ymm && bit(l7.ebx, 5);
    f.avx512f = os_zmm && bit(l7.ebx, 16);
    f.avx512dq = os_zmm && bit(l7.ebx, 17);
    f.avx512bw = os_zmm && bit(l7.ebx, 30);
    f.avx512vl = os_zmm && bit(l7.ebx, 31);
    f.avx512_vnni = os_zmm && bit(l7.ecx, 11);
    f.avx512_fp16 = os_zmm && bit(l7.edx, 23);
    f.avx512_bf16 = os_zmm && bit(l7s1.eax, 5);
    f.amx_bf16 = os_amx && bit(l7.edx, 22);
    f.amx_tile = os_amx && bit(l7.edx, 24);
    f.amx_int8 = os_amx && bit(l7.edx, 25);
  }
  return f;
}

}  // namespace

std::vector<std::string> CpuFeatures::names() const {
  std::vector<std::string> out;
  auto add = [&](bool on, const char* name) {
    if (on) out.emplace_back(name);
  };
  add(sse4_2, "sse4_2");
  add(avx, "avx");
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512dq, "avx512dq");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512_vnni, "avx512_vnni");
  add(avx512_bf16, "avx512_bf16");
  add(avx512_fp16, "avx512_fp16");
  add(amx_tile, "amx_tile");
  add(amx_bf16, "amx_bf16");
  add(amx_int8, "amx_int8");
  return out;
}

namespace {
// Set only by ScopedCpuFeaturesForTest (tests); null otherwise.
std::atomic<const CpuFeatures*> g_features_override{nullptr};
}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  if (const CpuFeatures* o = g_features_override.load(std::memory_order_relaxed)) return *o;
  return features;
}

ScopedCpuFeaturesForTest::ScopedCpuFeaturesForTest(const CpuFeatures& features)
    : features_(features), saved_(g_features_override.load(std::memory_order_relaxed)) {
  g_features_override.store(&features_, std::memory_order_relaxed);
}

ScopedCpuFeaturesForTest::~ScopedCpuFeaturesForTest() {
  g_features_override.store(saved_, std::memory_order_relaxed);
}

const char* to_string(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "unknown";
}

bool isa_supported(Isa isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2: return f.avx2 && f.fma;
    case Isa::kAvx512: return f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl;
  }
  return false;
}

namespace {

Isa detect_best_isa() {
  Isa best = isa_supported(Isa::kAvx512) ? Isa::kAvx512
             : isa_supported(Isa::kAvx2) ? Isa::kAvx2
                                         : Isa::kScalar;
  const char* env = std::getenv("TREX_ISA");
  if (env == nullptr) return best;
  for (Isa forced : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
    if (std::strcmp(env, to_string(forced)) == 0) return forced < best ? forced : best;
  return best;
}

}  // namespace

Isa best_isa() {
  static const Isa isa = detect_best_isa();
  return isa;
}

std::string cpu_model_name() {
  if (unsigned(__get_cpuid_max(0x80000000u, nullptr)) < 0x80000004u) return "unknown";
  char brand[49] = {};
  for (unsigned i = 0; i < 3; ++i) {
    Regs r = cpuid(0x80000002 + i);
    std::memcpy(brand + 16 * i + 0, &r.eax, 4);
    std::memcpy(brand + 16 * i + 4, &r.ebx, 4);
    std::memcpy(brand + 16 * i + 8, &r.ecx, 4);
    std::memcpy(brand + 16 * i + 12, &r.edx, 4);
  }
  std::string s(brand);
  size_t b = s.find_first_not_of(' ');
  size_t e = s.find_last_not_of(' ');
  if (b == std::string::npos) return "unknown";
  return s.substr(b, e - b + 1);
}

}  // namespace trex::core
