#include "trex/plan/search.h"

#include <algorithm>

#include "trex/util/error.h"

namespace trex::plan {

namespace {

std::vector<long> divisors(long n, long limit) {
  std::vector<long> d;
  for (long i = 1; i <= std::min(n, limit); ++i)
    if (n % i == 0) d.push_back(i);
  return d;
}

}  // namespace

SearchResult search(const model::ModelConfig& m, const Cluster& c, const Run& run, const SearchOptions& o) {
  SearchResult res;
  const long devices = c.devices();
  const long max_tp = o.max_tp > 0 ? o.max_tp : c.devices_per_node;
  const bool can_swap = o.allow_swap && c.host_bytes_per_device > 0 && c.host_link_bw > 0;
  std::vector<Prediction> fits;

  auto try_one = [&](Strategy s) -> const Prediction* {
    ++res.evaluated;
    fits.push_back(predict(m, c, run, s));
    if (!fits.back().memory.fits) {
      fits.pop_back();
      return nullptr;
    }
    ++res.fitting;
    return &fits.back();
  };

  for (long tp : divisors(m.attention.heads, max_tp)) {
    for (long cp = 1; cp <= 16; cp *= 2) {
      if (run.seq_len % cp != 0 || devices % (tp * cp) != 0) continue;
      for (long pp : divisors(devices / (tp * cp), m.layers)) {
        long dp = devices / (tp * cp * pp);
        for (long vpp : {1L, 2L, 4L}) {
          if (vpp > 1 && (pp == 1 || pp * vpp > m.layers)) continue;
          std::vector<long> eps = m.is_moe() ? divisors(m.ffn.routed_experts, tp * cp * dp) : std::vector<long>{1};
          for (long ep : eps) {
            for (long etp : {1L, 2L, 4L, 8L}) {
              if (etp > 1 && (!m.is_moe() || etp > c.devices_per_node)) continue;
              ++res.layouts;
              Strategy s = o.base;
              s.layout = {};  // an explicit layout belongs to one pp x vpp; the search splits evenly
              s.tp = tp;
              s.cp = cp;
              s.pp = pp;
              s.vpp = vpp;
              s.dp = 0;
              s.ep = ep;
              s.etp = etp;
              s.recompute = Recompute::kFull;
              s.swap_optimizer = can_swap;
              try {
                complete_and_check(m, c, run, s);
              } catch (const InputError&) {
                ++res.refused;
                continue;
              }
              // The lightest-memory variant first: if it does not fit, nothing of this layout does.
              Strategy light = s;
              bool light_fits = try_one(light) != nullptr;
              if (!light_fits) {
                ++res.pruned_memory;
                continue;
              }
              for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
                Strategy v = s;
                v.recompute = r;
                v.swap_optimizer = false;
                bool off_fits = (r == Recompute::kFull && !can_swap) ? true : try_one(v) != nullptr;
                if (off_fits) break;  // heavier recomputation only adds compute
                if (can_swap && r != Recompute::kFull) {
                  v.swap_optimizer = true;
                  try_one(v);
                }
              }
            }
          }
        }
      }
    }
  }
  std::sort(fits.begin(), fits.end(), [](const Prediction& a, const Prediction& b) { return a.time.step < b.time.step; });
  // One entry per distinct strategy (the lightest variant may repeat a later one).
  for (const Prediction& p : fits) {
    if (int(res.top.size()) >= o.top_k) break;
    bool seen = false;
    for (const Prediction& q : res.top) {
      const Strategy &a = p.strategy, &b = q.strategy;
      seen |= a.tp == b.tp && a.cp == b.cp && a.pp == b.pp && a.vpp == b.vpp && a.ep == b.ep && a.etp == b.etp &&
              a.recompute == b.recompute && a.swap_optimizer == b.swap_optimizer;
    }
    if (!seen) res.top.push_back(p);
  }
  return res;
}

}  // namespace trex::plan
