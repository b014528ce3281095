#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "trex/profile/report.h"

namespace trex::profile {
namespace {

void add(std::string& out, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  out += buf;
}

double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

// Seconds from a second up, milliseconds below.
std::string duration(double us) {
  char buf[32];
  if (us >= 1e6) std::snprintf(buf, sizeof buf, "%.3f s", us / 1e6);
  else std::snprintf(buf, sizeof buf, "%.3f ms", us / 1e3);
  return buf;
}

}  // namespace

std::string anatomy_text(const Anatomy& a, int top) {
  std::string out;
  add(out, "trace anatomy: %zu trace%s, %ld step%s, %ld launches, kernel time %s on a %s timeline (idle %.1f%%)\n",
      a.traces.size(), a.traces.size() == 1 ? "" : "s", a.steps, a.steps == 1 ? "" : "s", a.launches,
      duration(a.kernel_us).c_str(), duration(a.window_us).c_str(), pct(a.idle_us, a.window_us));
  for (const std::string& t : a.traces) add(out, "  trace: %s\n", t.c_str());
  for (const std::string& n : a.notes) add(out, "  note: %s\n", n.c_str());
  if (a.roofline)
    add(out, "  roofline: %s: %.1f GFLOP/s (%s), %.1f GB/s (%s), ridge %.1f FLOP/B\n", a.roofline->device.c_str(),
        a.roofline->peak_flops / 1e9, a.roofline->peak_name.c_str(), a.roofline->bytes_per_s / 1e9,
        a.roofline->bandwidth_name.c_str(), a.roofline->ridge());
  else
    add(out, "  roofline: none (give --hw FILE, e.g. configs/hw/h200.toml or the file of `trex hw probe`)\n");

  add(out, "categories (share of kernel time; idle: share of the timeline):\n");
  for (int c = 0; c < kKernelCategories; ++c)
    if (a.category_us[c] > 0)
      add(out, "  %-14s %10.3f ms  %5.1f%%\n", to_string(KernelCategory(c)), a.category_us[c] / 1e3,
          pct(a.category_us[c], a.kernel_us));
  add(out, "  %-14s %10.3f ms  %5.1f%%\n", "idle", a.idle_us / 1e3, pct(a.idle_us, a.window_us));

  add(out, "heavy head: %ld kernel%s, %.1f%% of kernel time (largest first up to %.0f%%, median launch >= %.0f us)\n",
      a.head_kernels, a.head_kernels == 1 ? "" : "s", 100 * a.head_share, 100 * a.head_cover, a.tail_us);
  add(out, "launch fragmentation: non-matmul operators %.1f%% of launches, %.1f%% of time; "
           "launches under %.0f us: %ld (%.1f%% of launches, %.1f%% of time)\n",
      100 * a.non_matmul_launch_share, 100 * a.non_matmul_time_share, a.tail_us, a.short_launches,
      100 * a.short_launch_share, 100 * a.short_time_share);
  if (!a.pipe_ratios.empty()) {
    add(out, "pipe ratios (duration-weighted):");
    for (const auto& [p, v] : a.pipe_ratios) add(out, " %s %.3f", p.c_str(), v);
    add(out, "\n");
    if (a.movement_over_vector > 0)
      add(out, "  memory movement (aiv MTE2 + MTE3) is %.1fx the vector-compute share\n", a.movement_over_vector);
  }

  if (top <= 0) return out;
  int shown = std::min<int>(top, int(a.kernels.size()));
  add(out, "kernels (%d largest of %zu):\n", shown, a.kernels.size());
  add(out, "  %6s %10s %8s %10s  %-13s %-13s %6s %5s  %-18s %s\n", "share", "time_ms", "launches", "median_us",
      "category", "regime", "FLOP/B", "roof", "route", "name");
  for (int i = 0; i < shown; ++i) {
    const KernelSummary& k = a.kernels[size_t(i)];
    char intensity[16] = "-", roof[16] = "-";
    if (k.regime_basis.rfind("roofline", 0) == 0) {
      if (k.bytes > 0) std::snprintf(intensity, sizeof intensity, "%.2f", k.intensity);
      std::snprintf(roof, sizeof roof, "%.0f%%", 100 * k.roof_fraction);
    }
    add(out, "  %5.1f%% %10.3f %8ld %10.1f  %-13s %-13s %6s %5s  %-18s %s\n", 100 * k.share, k.total_us / 1e3,
        k.launches, k.median_us, to_string(k.category), k.regime.c_str(), intensity, roof, k.route.c_str(),
        k.name.c_str());
  }
  return out;
}

}  // namespace trex::profile
