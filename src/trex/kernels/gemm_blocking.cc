// Block sizes from cache sizes: the analytical model of Low, Igual, Smith and Quintana-Orti,
// "Analytical modeling is enough for high-performance BLIS" (TOMS 2016), adapted to what this
// micro-kernel measured.
//
// The macro-kernel walks NR-column slivers of the packed B block (outer, jr) and MR-row slivers
// of the packed A block (inner, ir). So:
//   KC: each micro-kernel call loads and stores its MR x NR tile of C once (from L3 or memory
//       when the k loop has several depth blocks) and pays its call and epilogue, against
//       MR * NR * KC FMAs; KC sets how far that is amortised. BLIS sizes KC so that the A and B
//       slivers share L1, which on a 32 KiB L1 gives KC 160 for 12 x 32; but the slivers need
//       not stay in L1: the kernel reads (MR + NR) floats per MR * NR / 16 cycles of FMAs (176
//       bytes per 24 cycles for 12 x 32), a small part of what L2 delivers, so the B sliver is
//       re-read from L2 for each A sliver at no cost. On the 2-core AMD EPYC (L1 32 KiB, L2 1
//       MiB), one thread: KC 160 -> 512 took the macro-kernel from 0.88 to 0.96 of the FMA peak
//       and the 2048^3 and LM-head products from 96 and 87 to 104-106 GFLOP/s (the issue-15
//       note, session 13). So KC is the depth whose B sliver (KC x NR) takes a sixteenth of L2,
//       down to a multiple of 64 and clamped to [64, 512] (beyond 512 the C tile's share is
//       under 1% and a deeper block only shrinks MC; 768 and 1024 measured the same as 512).
//   MC: the packed MC x KC block of A is reused by every jr, so it stays in L2; give it a quarter
//       of L2 (the rest holds the B slivers on their way in, the C tiles, and the source rows of
//       the next A block while it is packed): MC = (L2 / 4) / (KC * 4), rounded down to a
//       multiple of MR (at KC 512, MC 120 and 252 measured the same on one thread).
//   NC: the packed KC x NC block of B is reused by every ic, so it stays in L3; give it half of
//       L3: NC = (L3 / 2) / (KC * 4), rounded down to a multiple of NR, capped at 4096 (beyond
//       that a larger block saves no packing and only makes the buffer larger).
// On the AMD EPYC (L2 1 MiB, L3 32 MiB): AVX-512 12x32 gives KC 512, MC 120, NC 4096; AVX2 6x16
// KC 512, MC 126, NC 4096. On the Intel Xeon (L2 2 MiB, L3 480 MiB): KC 512, MC 252, NC 4096.
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "trex/kernels/gemm.h"
#include "trex/kernels/gemm_internal.h"
#include "trex/kernels/tuning.h"

namespace trex::kernels {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

// "48K", "2048K", "1M" -> bytes; 0 when unreadable.
int64_t parse_size(const std::string& s) {
  if (s.empty()) return 0;
  int64_t v = 0;
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') v = v * 10 + (s[i++] - '0');
  if (i < s.size() && (s[i] == 'K' || s[i] == 'k')) v <<= 10;
  if (i < s.size() && (s[i] == 'M' || s[i] == 'm')) v <<= 20;
  if (i < s.size() && (s[i] == 'G' || s[i] == 'g')) v <<= 30;
  return v;
}

int64_t round_down(int64_t v, int64_t multiple) { return v / multiple * multiple; }

}  // namespace

CacheSizes read_cache_sizes() {
  CacheSizes cs;
  for (int idx = 0; idx < 8; ++idx) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx) + "/";
    std::string level = read_line(dir + "level");
    if (level.empty()) break;
    std::string type = read_line(dir + "type");
    if (type == "Instruction") continue;
    int64_t size = parse_size(read_line(dir + "size"));
    if (size <= 0) continue;
    if (level == "1") {
      cs.l1_bytes = size;
      std::string ways = read_line(dir + "ways_of_associativity");
      if (!ways.empty() && std::stoi(ways) > 1) cs.l1_ways = std::stoi(ways);
    } else if (level == "2") {
      cs.l2_bytes = size;
    } else if (level == "3") {
      cs.l3_bytes = size;
    }
  }
  return cs;
}

GemmBlocking derive_gemm_blocking(core::Isa isa, const CacheSizes& caches) {
  GemmBlocking g;
  g.isa = isa;
  g.caches = caches;
  switch (isa) {
    case core::Isa::kAvx512: g.mr = gemm_detail::kMrAvx512; g.nr = gemm_detail::kNrAvx512; break;
    case core::Isa::kAvx2: g.mr = gemm_detail::kMrAvx2; g.nr = gemm_detail::kNrAvx2; break;
    default: g.mr = gemm_detail::kMrScalar; g.nr = gemm_detail::kNrScalar; break;
  }
  const int64_t f = sizeof(float);
  g.kc = std::clamp<int64_t>(round_down(caches.l2_bytes / 16 / (g.nr * f), 64), 64, 512);
  g.mc = std::max<int64_t>(round_down(caches.l2_bytes / 4 / (g.kc * f), g.mr), g.mr);
  g.nc = std::clamp<int64_t>(round_down(caches.l3_bytes / 2 / (g.kc * f), g.nr), g.nr,
                             round_down(4096, g.nr));
  return g;
}

const GemmBlocking& gemm_blocking() {
  static const GemmBlocking g = derive_gemm_blocking(core::best_isa(), read_cache_sizes());
  return g;
}

GemmBlocking apply_gemm_tuning(const GemmBlocking& base, const std::map<std::string, int64_t>& params) {
  for (const auto& [name, v] : params) check_param("gemm", name, v);
  auto get = [&](const char* name) {
    auto it = params.find(name);
    return it == params.end() ? int64_t(0) : it->second;
  };
  GemmBlocking g = base;
  if (int64_t u = get("ukernel")) {
    core::Isa isa = u == 3 ? core::Isa::kAvx512 : u == 2 ? core::Isa::kAvx2 : core::Isa::kScalar;
    if (isa != base.isa) g = derive_gemm_blocking(isa, base.caches);
  }
  if (int64_t kc = get("kc")) g.kc = kc;
  if (int64_t mc = get("mc")) g.mc = std::max<int64_t>(round_down(mc, g.mr), g.mr);
  if (int64_t nc = get("nc")) g.nc = std::max<int64_t>(round_down(nc, g.nr), g.nr);
  if (int64_t s = get("split")) g.split = int(s);
  return g;
}

GemmBlocking gemm_blocking_for(int64_t m, int64_t n, int64_t k) {
  const GemmBlocking& base = gemm_blocking();
  if (!tuning_active()) return base;
  ParamMap p = tuned_params("gemm", shape_class({m, n, k}));
  return p.empty() ? base : apply_gemm_tuning(base, p);
}

std::string GemmBlocking::explain() const {
  std::ostringstream o;
  o << core::to_string(isa) << " MR=" << mr << " NR=" << nr << " KC=" << kc << " MC=" << mc
    << " NC=" << nc << " (L1 " << caches.l1_bytes / 1024 << " KiB " << caches.l1_ways
    << "-way, L2 " << caches.l2_bytes / 1024 << " KiB, L3 " << caches.l3_bytes / 1024
    << " KiB; KC = L2/16 / (NR*4) in [64, 512], MC = L2/4 / (KC*4), NC = min(L3/2 / (KC*4), 4096))";
  return o.str();
}

}  // namespace trex::kernels
