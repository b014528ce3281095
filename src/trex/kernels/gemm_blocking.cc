// Block sizes from cache sizes: the analytical model of Low, Igual, Smith and Quintana-Orti,
// "Analytical modeling is enough for high-performance BLIS" (TOMS 2016), simplified.
//
// The macro-kernel walks NR-column slivers of the packed B block (outer, jr) and MR-row slivers
// of the packed A block (inner, ir). So:
//   KC: one micro-kernel call streams an MR x KC sliver of A and reuses a KC x NR sliver of B
//       across all ir; both must sit in L1 together. One way of the set-associative L1 is left
//       for the C tile and stray lines, so KC = (L1 * (W-1)/W) / ((MR + NR) * 4 bytes), rounded
//       down to a multiple of 8 (an unrolled k loop and 32-byte rows) and clamped to [64, 1024].
//   MC: the packed MC x KC block of A is reused by every jr, so it stays in L2; give it a quarter
//       of L2 (the rest holds the B slivers on their way in, the C tiles, and the source rows of
//       the next A block while it is packed; with half of L2, 1024^3 ran 5-10% slower here):
//       MC = (L2 / 4) / (KC * 4), rounded down to a multiple of MR.
//   NC: the packed KC x NC block of B is reused by every ic, so it stays in L3; give it half of
//       L3: NC = (L3 / 2) / (KC * 4), rounded down to a multiple of NR, capped at 4096 (beyond
//       that a larger block saves no packing and only makes the buffer larger).
// On this machine (L1d 48 KiB 12-way, L2 2 MiB, L3 480 MiB): AVX2 6x16 gives KC 512, MC 252,
// NC 4096; AVX-512 12x32 gives KC 256, MC 504, NC 4096.
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
  int ways = std::max(caches.l1_ways, 2);
  int64_t l1_usable = caches.l1_bytes * (ways - 1) / ways;
  g.kc = std::clamp<int64_t>(round_down(l1_usable / ((g.mr + g.nr) * f), 8), 64, 1024);
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
    << " KiB; KC = L1*(W-1)/W / ((MR+NR)*4), MC = L2/4 / (KC*4), NC = min(L3/2 / (KC*4), 4096))";
  return o.str();
}

}  // namespace trex::kernels
