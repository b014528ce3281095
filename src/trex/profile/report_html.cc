// The HTML page: one file, inline SVG plots, no scripts or downloads.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "trex/profile/report.h"

namespace trex::profile {
namespace {

std::string fmt(const char* f, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

const char* route_colour(const std::string& route) {
  if (route == kRouteTuneTiling) return "#2b6cb0";
  if (route == kRouteOverlap) return "#805ad5";
  return "#dd6b20";
}

const char* category_colour(int c) {
  static const char* kColours[] = {"#2b6cb0", "#2f855a", "#dd6b20", "#d69e2e", "#718096",
                                   "#805ad5", "#c53030", "#a0aec0"};
  return kColours[c % 8];
}

// Panel (a): the largest kernels by share, coloured by route.
std::string head_chart(const Anatomy& a) {
  const int n = std::min<int>(20, int(a.kernels.size()));
  const int w = 760, label = 260, row = 18, h = 30 + n * row;
  double top = n > 0 ? a.kernels[0].share : 1;
  std::string s = fmt("<svg width=\"%d\" height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\" font-size=\"11\">\n", w, h);
  for (int i = 0; i < n; ++i) {
    const KernelSummary& k = a.kernels[size_t(i)];
    double len = top > 0 ? (w - label - 70) * k.share / top : 0;
    int y = 20 + i * row;
    std::string name = k.name.size() > 40 ? k.name.substr(0, 39) + "..." : k.name;
    s += fmt("<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>", label - 6, y + 12, escaped(name).c_str());
    s += fmt("<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>%s: %.1f%%, %s</title></rect>",
             label, y + 2, len, row - 4, route_colour(k.route), escaped(k.name).c_str(), 100 * k.share, k.route.c_str());
    s += fmt("<text x=\"%.1f\" y=\"%d\">%.1f%%</text>\n", label + len + 4, y + 12, 100 * k.share);
  }
  s += fmt("<text x=\"%d\" y=\"12\" fill=\"#2b6cb0\">&#9632; tune tiling</text>", label);
  s += fmt("<text x=\"%d\" y=\"12\" fill=\"#dd6b20\">&#9632; fuse / re-express</text>", label + 110);
  s += fmt("<text x=\"%d\" y=\"12\" fill=\"#805ad5\">&#9632; overlap / schedule</text>", label + 260);
  return s + "</svg>\n";
}

// Panel (b): share of launches against share of time.
std::string fragmentation_chart(const Anatomy& a) {
  struct Pair {
    std::string label;
    double launches, time;
  };
  Pair pairs[] = {{"non-matmul operators", a.non_matmul_launch_share, a.non_matmul_time_share},
                  {fmt("launches under %.0f us", a.tail_us), a.short_launch_share, a.short_time_share}};
  const int w = 760, label = 200, row = 22, h = 40 + 2 * (2 * row + 10);
  std::string s = fmt("<svg width=\"%d\" height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\" font-size=\"11\">\n", w, h);
  int y = 24;
  for (const Pair& p : pairs) {
    double scale = w - label - 70;
    s += fmt("<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>", label - 6, y + row, escaped(p.label).c_str());
    s += fmt("<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#718096\"/>", label, y, scale * p.launches, row - 4);
    s += fmt("<text x=\"%.1f\" y=\"%d\">%.1f%% of launches</text>", label + scale * p.launches + 4, y + 13, 100 * p.launches);
    s += fmt("<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#dd6b20\"/>", label, y + row, scale * p.time, row - 4);
    s += fmt("<text x=\"%.1f\" y=\"%d\">%.1f%% of time</text>\n", label + scale * p.time + 4, y + row + 13, 100 * p.time);
    y += 2 * row + 10;
  }
  return s + "</svg>\n";
}

// The step's time by category, idle included, as one stacked bar.
std::string category_chart(const Anatomy& a) {
  const int w = 760, h = 70, bar = 720;
  double total = a.kernel_us + a.idle_us;
  std::string s = fmt("<svg width=\"%d\" height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\" font-size=\"11\">\n", w, h);
  double x = 20;
  int legend = 20;
  for (int c = 0; c <= kKernelCategories; ++c) {
    double us = c < kKernelCategories ? a.category_us[c] : a.idle_us;
    if (us <= 0 || total <= 0) continue;
    const char* name = c < kKernelCategories ? to_string(KernelCategory(c)) : "idle";
    const char* colour = c < kKernelCategories ? category_colour(c) : "#e2e8f0";
    double len = bar * us / total;
    s += fmt("<rect x=\"%.1f\" y=\"8\" width=\"%.1f\" height=\"24\" fill=\"%s\"><title>%s %.1f%%</title></rect>", x, len,
             colour, name, 100 * us / total);
    s += fmt("<text x=\"%d\" y=\"52\" fill=\"%s\">&#9632;</text><text x=\"%d\" y=\"52\">%s %.1f%%</text>\n", legend,
             colour == std::string("#e2e8f0") ? "#a0aec0" : colour, legend + 12, name, 100 * us / total);
    legend += 16 + int(7 * (std::string(name).size() + 6));
    x += len;
  }
  return s + "</svg>\n";
}

// The roofline: log-log, kernels with flops at (intensity, achieved FLOP/s).
std::string roofline_chart(const Anatomy& a) {
  const Roofline& r = *a.roofline;
  std::vector<const KernelSummary*> pts;
  for (const KernelSummary& k : a.kernels)
    if (k.regime_basis == "roofline" && k.flops > 0 && k.bytes > 0 && k.total_us > 0) pts.push_back(&k);
  const int w = 760, h = 360, l = 70, b = 40, t = 15, rgt = 20;
  double xlo = std::log10(std::min(0.1, r.ridge() / 100)), xhi = std::log10(std::max(1000.0, r.ridge() * 10));
  double ylo = std::log10(r.peak_flops) - 5, yhi = std::log10(r.peak_flops) + 0.3;
  for (const KernelSummary* k : pts) {
    xlo = std::min(xlo, std::floor(std::log10(k->intensity)));
    xhi = std::max(xhi, std::ceil(std::log10(k->intensity)));
    ylo = std::min(ylo, std::floor(std::log10(k->flops / (k->total_us * 1e-6))));
  }
  auto X = [&](double v) { return l + (w - l - rgt) * (std::log10(v) - xlo) / (xhi - xlo); };
  auto Y = [&](double v) { return h - b - (h - b - t) * (std::log10(v) - ylo) / (yhi - ylo); };
  std::string s = fmt("<svg width=\"%d\" height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\" font-size=\"11\">\n", w, h);
  s += fmt("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#a0aec0\"/>", l, t, w - l - rgt, h - b - t);
  for (int e = int(std::ceil(xlo)); e <= int(std::floor(xhi)); ++e)
    s += fmt("<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">1e%d</text>", X(std::pow(10.0, e)), h - b + 14, e);
  for (int e = int(std::ceil(ylo)); e <= int(std::floor(yhi)); ++e)
    s += fmt("<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">1e%d</text>", l - 4, Y(std::pow(10.0, e)) + 4, e);
  s += fmt("<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte)</text>", (l + w) / 2, h - 6);
  s += fmt("<text x=\"14\" y=\"%d\" transform=\"rotate(-90 14 %d)\" text-anchor=\"middle\">FLOP/s</text>", h / 2, h / 2);
  // The roof: bandwidth x intensity up to the ridge, then the peak.
  double x0 = std::pow(10.0, xlo), x1 = std::pow(10.0, xhi);
  double xs = std::max(x0, std::pow(10.0, ylo) / r.bytes_per_s);
  s += fmt("<polyline fill=\"none\" stroke=\"#c53030\" stroke-width=\"2\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
           X(xs), Y(xs * r.bytes_per_s), X(r.ridge()), Y(r.peak_flops), X(x1), Y(r.peak_flops));
  for (const KernelSummary* k : pts) {
    double achieved = k->flops / (k->total_us * 1e-6);
    s += fmt("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" fill-opacity=\"0.7\"><title>%s: %.2f FLOP/B, "
             "%.2f GFLOP/s, %.0f%% of roof</title></circle>\n",
             X(k->intensity), Y(achieved), 3 + 8 * std::sqrt(k->share), route_colour(k->route), escaped(k->name).c_str(),
             k->intensity, achieved / 1e9, 100 * k->roof_fraction);
  }
  return s + "</svg>\n";
}

std::string pipes_chart(const Anatomy& a) {
  const int w = 760, label = 200, row = 18, h = 10 + row * int(a.pipe_ratios.size());
  std::string s = fmt("<svg width=\"%d\" height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\" font-size=\"11\">\n", w, h);
  int y = 4;
  for (const auto& [p, v] : a.pipe_ratios) {
    s += fmt("<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>", label - 6, y + 12, escaped(p).c_str());
    s += fmt("<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#2f855a\"/>", label, y + 2,
             (w - label - 60) * std::clamp(v, 0.0, 1.0), row - 4);
    s += fmt("<text x=\"%.1f\" y=\"%d\">%.3f</text>\n", label + (w - label - 60) * std::clamp(v, 0.0, 1.0) + 4, y + 12, v);
    y += row;
  }
  return s + "</svg>\n";
}

}  // namespace

std::string anatomy_html(const Anatomy& a) {
  std::string h =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>trex profile: trace anatomy</title>\n"
      "<style>body{font-family:sans-serif;max-width:860px;margin:2em auto;color:#1a202c}"
      "table{border-collapse:collapse;font-size:12px}td,th{padding:2px 6px;border-bottom:1px solid #e2e8f0;"
      "text-align:right}td.l,th.l{text-align:left}pre{background:#f7fafc;padding:8px;font-size:11px;"
      "overflow-x:auto}</style></head><body>\n<h1>Trace anatomy</h1>\n";
  h += "<pre>" + escaped(anatomy_text(a, 0)) + "</pre>\n";
  h += "<h2>(a) Heavy head: kernels by share of kernel time</h2>\n" + head_chart(a);
  h += "<h2>(b) Launch fragmentation</h2>\n" + fragmentation_chart(a);
  h += "<h2>Time by category</h2>\n" + category_chart(a);
  if (!a.pipe_ratios.empty()) {
    h += "<h2>(c) Duration-weighted pipe ratios</h2>\n" + pipes_chart(a);
    if (a.movement_over_vector > 0)
      h += fmt("<p>Memory movement (aiv MTE2 + MTE3) is %.1fx the vector-compute share.</p>\n", a.movement_over_vector);
  }
  if (a.roofline) {
    h += "<h2>(d) Roofline: " + escaped(a.roofline->device) + "</h2>\n" + roofline_chart(a);
    h += "<p>Kernels with both FLOP and byte counts; area follows the share of time. Kernels with bytes only "
         "(elementwise) are in the table.</p>\n";
  }
  h += "<h2>Kernels and routes</h2>\n<table><tr><th>share</th><th>time ms</th><th>launches</th><th>median us</th>"
       "<th class=\"l\">category</th><th class=\"l\">regime</th><th>FLOP/B</th><th>roof</th><th class=\"l\">route</th>"
       "<th class=\"l\">name</th></tr>\n";
  for (const KernelSummary& k : a.kernels) {
    bool roof = k.regime_basis.rfind("roofline", 0) == 0;
    h += fmt("<tr><td>%.1f%%</td><td>%.3f</td><td>%ld</td><td>%.1f</td><td class=\"l\">%s</td><td class=\"l\">%s</td>"
             "<td>%s</td><td>%s</td><td class=\"l\" style=\"color:%s\">%s</td>",
             100 * k.share, k.total_us / 1e3, k.launches, k.median_us, to_string(k.category), k.regime.c_str(),
             roof && k.bytes > 0 ? fmt("%.2f", k.intensity).c_str() : "-", roof ? fmt("%.0f%%", 100 * k.roof_fraction).c_str() : "-",
             route_colour(k.route), k.route.c_str());
    h += "<td class=\"l\">" + escaped(k.name) + "</td></tr>\n";
  }
  h += "</table>\n</body></html>\n";
  return h;
}

}  // namespace trex::profile
