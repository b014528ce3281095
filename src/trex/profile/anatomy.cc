#include "trex/profile/anatomy.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

namespace trex::profile {
namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + long(m), v.end());
  double hi = v[m];
  if (v.size() % 2) return hi;
  return (*std::max_element(v.begin(), v.begin() + long(m)) + hi) / 2;
}

// Spec section 7: the largest duration-weighted pipe ratio names the regime; none above 0.5
// means the pipes wait on each other.
void regime_from_pipes(KernelSummary& k) {
  const std::string* best = nullptr;
  double top = -1;
  for (const auto& [name, v] : k.pipe_ratios)
    if (v > top) {
      top = v;
      best = &name;
    }
  if (!best) return;
  char basis[96];
  std::snprintf(basis, sizeof basis, "pipe %s %.2f", best->c_str(), top);
  k.regime_basis = basis;
  if (top <= 0.5) {
    k.regime = "overlap-bound";
    return;
  }
  const std::string& n = *best;
  if (n.find("mac") != std::string::npos || n.find("cube") != std::string::npos) k.regime = "cube-bound";
  else if (n.find("vec") != std::string::npos) k.regime = "vector-bound";
  else if (n.find("mte2") != std::string::npos || n.find("mte1") != std::string::npos) k.regime = "load-bound";
  else if (n.find("mte3") != std::string::npos || n.find("fixpipe") != std::string::npos) k.regime = "store-bound";
  else if (n.find("scalar") != std::string::npos) k.regime = "scalar-bound";
  else k.regime = "overlap-bound";
}

}  // namespace

Anatomy analyze(const std::vector<KernelTrace>& traces, const AnatomyOptions& options) {
  Anatomy a;
  a.head_cover = options.head_cover;
  a.tail_us = options.tail_us;
  a.roofline = options.roofline;

  std::unordered_map<std::string, size_t> index;
  std::vector<std::vector<double>> launch_times;
  std::vector<std::map<std::string, double>> weighted_pipes;  // sum ratio x time
  std::vector<double> piped_time;
  std::map<std::string, double> all_pipes;
  double all_piped_time = 0;
  for (const KernelTrace& t : traces) {
    a.traces.push_back(t.path + " (" + t.format + ")");
    for (const std::string& n : t.notes) a.notes.push_back(t.path + ": " + n);
    a.window_us += t.window_us;
    a.busy_us += t.busy_us;
    a.steps += long(t.steps.size());
    for (const KernelRecord& r : t.kernels) {
      // msprof names every node apart ("layer3/attn/Cast_12"); its operator type is the kernel.
      const std::string& key = r.op_type.empty() ? r.name : r.op_type;
      auto [it, fresh] = index.try_emplace(key, a.kernels.size());
      if (fresh) {
        KernelSummary k;
        k.name = key;
        k.category = classify_kernel(r, t.format);
        a.kernels.push_back(k);
        launch_times.emplace_back();
        weighted_pipes.emplace_back();
        piped_time.push_back(0);
      }
      size_t i = it->second;
      KernelSummary& k = a.kernels[i];
      k.total_us += r.dur_us;
      k.flops += r.flops;
      k.bytes += r.bytes;
      a.kernel_us += r.dur_us;
      a.category_us[int(k.category)] += r.dur_us;
      if (r.is_launch) {
        ++k.launches;
        ++a.launches;
        launch_times[i].push_back(r.dur_us);
        if (r.dur_us < options.tail_us) ++k.short_launches;
      }
      if (!r.pipe_ratios.empty()) {
        for (const auto& [p, v] : r.pipe_ratios) {
          weighted_pipes[i][p] += v * r.dur_us;
          all_pipes[p] += v * r.dur_us;
        }
        piped_time[i] += r.dur_us;
        all_piped_time += r.dur_us;
      }
    }
  }
  a.idle_us = std::max(0.0, a.window_us - a.busy_us);

  double non_matmul_us = 0, short_us = 0;
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    KernelSummary& k = a.kernels[i];
    k.share = a.kernel_us > 0 ? k.total_us / a.kernel_us : 0;
    k.launch_share = a.launches > 0 ? double(k.launches) / double(a.launches) : 0;
    k.median_us = median_of(launch_times[i]);
    for (double d : launch_times[i])
      if (d < options.tail_us) short_us += d;
    a.short_launches += k.short_launches;
    if (k.category != KernelCategory::kMatmul) {
      a.non_matmul_launches += k.launches;
      non_matmul_us += k.total_us;
    }
    if (piped_time[i] > 0)
      for (const auto& [p, w] : weighted_pipes[i]) k.pipe_ratios[p] = w / piped_time[i];
    if (a.roofline && (k.flops > 0 || k.bytes > 0)) {
      RooflinePoint p = place_on_roofline(*a.roofline, k.flops, k.bytes, k.total_us);
      k.intensity = p.intensity;
      k.roof_fraction = p.roof_fraction;
      k.regime = p.compute_bound ? "compute-bound" : "memory-bound";
      // Without bytes (Kineto counts FLOPs only) the memory roof is unknown: a lower bound.
      k.regime_basis = k.bytes > 0 ? "roofline" : "roofline (flops only)";
    }
    if (k.regime == "unknown") regime_from_pipes(k);
  }
  if (a.launches > 0) {
    a.non_matmul_launch_share = double(a.non_matmul_launches) / double(a.launches);
    a.short_launch_share = double(a.short_launches) / double(a.launches);
  }
  if (a.kernel_us > 0) {
    a.non_matmul_time_share = non_matmul_us / a.kernel_us;
    a.short_time_share = short_us / a.kernel_us;
  }
  if (all_piped_time > 0) {
    for (const auto& [p, w] : all_pipes) a.pipe_ratios[p] = w / all_piped_time;
    auto get = [&](const char* n) {
      auto it = a.pipe_ratios.find(n);
      return it == a.pipe_ratios.end() ? 0.0 : it->second;
    };
    if (get("aiv_vec_ratio") > 0) a.movement_over_vector = (get("aiv_mte2_ratio") + get("aiv_mte3_ratio")) / get("aiv_vec_ratio");
  }

  std::stable_sort(a.kernels.begin(), a.kernels.end(),
                   [](const KernelSummary& x, const KernelSummary& y) { return x.total_us > y.total_us; });
  // Fragmented and communication kernels are passed over: they neither join the head nor count
  // towards its cover, so a tail of tiny launches cannot crowd the tileable kernels out.
  double covered = 0;
  for (KernelSummary& k : a.kernels) {
    bool fragmented = k.launches == 0 || k.median_us < options.tail_us;
    if (k.category == KernelCategory::kCommunication) {
      k.route = kRouteOverlap;
    } else if (!fragmented && covered < options.head_cover * a.kernel_us) {
      covered += k.total_us;
      k.heavy_head = true;
      k.route = kRouteTuneTiling;
      ++a.head_kernels;
      a.head_share += k.share;
    } else {
      k.route = kRouteFuse;
    }
  }
  return a;
}

}  // namespace trex::profile
