// Regime diagnosis (see diagnose.h).
#include "trex/aura/diagnose.h"

#include <algorithm>
#include <cstdio>

namespace trex::aura {

Diagnosis diagnose(const TuneTarget& t, const AuraHardware& hw, double seconds) {
  Diagnosis d;
  d.seconds = seconds;
  const double threads = std::max(1, hw.threads);
  const double ws = t.bytes_in + t.bytes_out;
  double bw = hw.bw_mem;
  d.level = "memory";
  if (ws <= double(hw.l2_bytes) * threads) {
    bw = hw.bw_l2 * threads;
    d.level = "L2";
  } else if (ws <= double(hw.l3_bytes)) {
    bw = std::min(hw.bw_l3 * threads, 4 * hw.bw_mem);
    d.level = "L3";
  }
  if (t.flops > 0) {
    d.t_compute = t.flops / hw.peak_flops;
  } else {
    // Elementwise kernels: lane operations at the 8-lane FMA rate (as in the performance model).
    double ops = t.kernel == "swiglu.fwd" ? 32 : t.kernel == "swiglu.bwd" ? 44 : t.kernel == "cross_entropy" ? 46 : 4;
    d.t_compute = double(t.dims[0]) * double(t.dims[1]) * ops / (hw.peak_avx2 / 2);
  }
  d.t_load = t.bytes_in / bw;
  d.t_store = t.bytes_out / bw;
  if (seconds > 0) {
    d.compute = d.t_compute / seconds;
    d.load = d.t_load / seconds;
    d.store = d.t_store / seconds;
  }
  double top = std::max({d.compute, d.load, d.store});
  if (top < 0.5) d.regime = "latency";
  else if (top == d.compute) d.regime = "compute";
  else if (top == d.load) d.regime = "load";
  else d.regime = "store";
  const bool gemm = t.kernel == "gemm";
  if (d.regime == "compute") d.levers = gemm ? std::vector<std::string>{"ukernel", "kc", "split"}
                                             : std::vector<std::string>{"block_elems"};
  else if (d.regime == "load") d.levers = gemm ? std::vector<std::string>{"kc", "mc", "nc"}
                                               : std::vector<std::string>{"block_elems", "stream"};
  else if (d.regime == "store") d.levers = gemm ? std::vector<std::string>{"kc"}
                                                : std::vector<std::string>{"stream", "block_elems"};
  else d.levers = gemm ? std::vector<std::string>{"split", "mc", "nc"}
                       : std::vector<std::string>{"block_elems"};
  if (t.kernel == "cross_entropy" && (d.regime == "load" || d.regime == "latency"))
    d.levers.insert(d.levers.begin(), "vocab_tile");
  // Only the parameters this kernel has; a kernel whose parameters only split the work (rope,
  // kv_compress, sparse attention, mHC) moves the latency and imbalance with all of them.
  std::erase_if(d.levers, [&](const std::string& l) {
    return std::none_of(t.space.begin(), t.space.end(), [&](const SpaceParam& p) { return p.name == l; });
  });
  if (d.levers.empty())
    for (const SpaceParam& p : t.space) d.levers.push_back(p.name);
  return d;
}

std::string Diagnosis::text() const {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s-bound (working set in %s): measured %.3f ms; compute bound %.3f ms (%.0f%%), "
                "load %.3f ms (%.0f%%), store %.3f ms (%.0f%%)",
                regime.c_str(), level.c_str(), seconds * 1e3, t_compute * 1e3, compute * 100,
                t_load * 1e3, load * 100, t_store * 1e3, store * 100);
  std::string s = buf;
  s += "; levers:";
  for (const std::string& l : levers) s += " " + l;
  return s;
}

}  // namespace trex::aura
