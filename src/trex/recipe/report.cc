// The recipe report: Pass@1 with 95% Wilson intervals, loss curves, stage costs (recipe.h).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <vector>

#include "trex/recipe/recipe.h"
#include "trex/util/atomic_file.h"

namespace trex::recipe {

namespace {

using nlohmann::json;

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// (step, loss) of a run's metrics.jsonl; steps whose loss is null are left out.
std::vector<std::pair<double, double>> loss_curve(const std::string& run) {
  std::vector<std::pair<double, double>> pts;
  std::ifstream f(run + "/metrics.jsonl");
  for (std::string line; std::getline(f, line);) {
    const json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.contains("loss") && j["loss"].is_number())
      pts.emplace_back(j["step"].get<double>(), j["loss"].get<double>());
  }
  return pts;
}

// One SVG with every run's loss curve, a colour each.
std::string loss_svg(const std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>>& runs) {
  const double W = 640, H = 320, L = 50, R = 150, T = 20, B = 40;
  double xmax = 1, ymin = std::numeric_limits<double>::max(), ymax = std::numeric_limits<double>::lowest();
  for (const auto& [name, pts] : runs)
    for (const auto& [x, y] : pts) xmax = std::max(xmax, x), ymin = std::min(ymin, y), ymax = std::max(ymax, y);
  if (ymin > ymax) ymin = 0, ymax = 1;
  if (ymax - ymin < 1e-9) ymax = ymin + 1;
  const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", W) + "\" height=\"" + fmt("%.0f", H) +
                  "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  s += "<rect x=\"" + fmt("%.0f", L) + "\" y=\"" + fmt("%.0f", T) + "\" width=\"" + fmt("%.0f", W - L - R) + "\" height=\"" +
       fmt("%.0f", H - T - B) + "\" fill=\"none\" stroke=\"#888\"/>\n";
  s += "<text x=\"" + fmt("%.0f", L) + "\" y=\"" + fmt("%.0f", H - 10) + "\">step (1 to " + fmt("%.0f", xmax) +
       ")</text>\n<text x=\"4\" y=\"" + fmt("%.0f", T + 10) + "\">" + fmt("%.2f", ymax) + "</text>\n<text x=\"4\" y=\"" +
       fmt("%.0f", H - B) + "\">" + fmt("%.2f", ymin) + "</text>\n";
  int c = 0;
  for (const auto& [name, pts] : runs) {
    const char* col = colours[c % 6];
    std::string d;
    for (const auto& [x, y] : pts) {
      const double px = L + (W - L - R) * (x - 1) / std::max(1.0, xmax - 1);
      const double py = T + (H - T - B) * (ymax - y) / (ymax - ymin);
      d += (d.empty() ? "M" : " L") + fmt("%.1f", px) + "," + fmt("%.1f", py);
    }
    s += "<path d=\"" + d + "\" fill=\"none\" stroke=\"" + col + "\" stroke-width=\"1.5\"/>\n";
    s += "<text x=\"" + fmt("%.0f", W - R + 8) + "\" y=\"" + fmt("%.0f", T + 14 + 16 * c) + "\" fill=\"" + col + "\">" + name +
         "</text>\n";
    ++c;
  }
  return s + "</svg>\n";
}

}  // namespace

std::pair<double, double> wilson_interval(long k, long n) {
  if (n <= 0) return {0, 1};
  const double z = 1.959963984540054, p = double(k) / double(n), nn = double(n);
  const double centre = (p + z * z / (2 * nn)) / (1 + z * z / nn);
  const double half = z / (1 + z * z / nn) * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn));
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

void write_report(const Recipe& r, const std::string& out, const std::vector<StageResult>& results) {
  std::string md = "# Recipe " + r.name + "\n\nFrom `" + r.file + "`, output in `" + out + "`.\n\n";
  std::string html = "<!doctype html><html><head><meta charset=\"utf-8\"><title>Recipe " + r.name +
                     "</title></head><body style=\"font-family:sans-serif;max-width:60em\">\n<h1>Recipe " + r.name + "</h1>\n";
  md += "## Pass@1 on the evaluated benchmarks (95% Wilson intervals)\n\n| model | benchmark | correct / items | Pass@1 | 95% interval |\n|---|---|---|---|---|\n";
  html += "<h2>Pass@1 (95% Wilson intervals)</h2>\n<table border=\"1\" cellpadding=\"4\"><tr><th>model</th><th>benchmark</th>"
          "<th>correct / items</th><th>Pass@1</th><th>95% interval</th></tr>\n";
  for (const StageResult& s : results) {
    if (s.kind != "serve") continue;
    const long k = s.details.value("correct", 0L), n = s.details.value("items", 0L);
    const auto [lo, hi] = wilson_interval(k, n);
    const std::string label = s.details.value("label", s.name), bench = s.details.value("bench", std::string());
    std::vector<std::string> cells = {label, bench.substr(bench.rfind('/') + 1), std::to_string(k) + " / " + std::to_string(n),
                                      fmt("%.3f", s.details.value("pass_at_1", 0.0)), "[" + fmt("%.3f", lo) + ", " + fmt("%.3f", hi) + "]"};
    if (!s.skipped.empty()) cells = {label, cells[1], "skipped: " + s.skipped, "-", "-"};
    md += "|";
    html += "<tr>";
    for (const std::string& c : cells) md += " " + c + " |", html += "<td>" + c + "</td>";
    md += "\n";
    html += "</tr>\n";
  }
  html += "</table>\n";
  std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>> curves;
  for (const StageResult& s : results)
    if (s.kind == "train") curves.emplace_back(s.name, loss_curve(s.details.value("run", std::string())));
  if (!curves.empty()) {
    const std::string svg = loss_svg(curves);
    write_file_atomic(out + "/loss.svg", svg);
    md += "\n## Loss curves\n\n![loss curves](loss.svg)\n\n| run | steps | first loss | last loss |\n|---|---|---|---|\n";
    for (const auto& [name, pts] : curves)
      if (!pts.empty())
        md += "| " + name + " | " + fmt("%.0f", pts.back().first) + " | " + fmt("%.4f", pts.front().second) + " | " +
              fmt("%.4f", pts.back().second) + " |\n";
    html += "<h2>Loss curves</h2>\n" + svg;
  }
  md += "\n## Cost of each stage\n\n| stage | kind | wall seconds | this run |\n|---|---|---|---|\n";
  html += "<h2>Cost of each stage</h2>\n<table border=\"1\" cellpadding=\"4\"><tr><th>stage</th><th>kind</th><th>wall seconds</th><th>this run</th></tr>\n";
  double total = 0;
  for (const StageResult& s : results) {
    total += s.seconds;
    const std::string cells[] = {s.name, s.kind, fmt("%.1f", s.seconds),
                                 !s.skipped.empty() ? "skipped" : s.cached ? "cached" : "ran"};
    md += "|";
    html += "<tr>";
    for (const std::string& c : cells) md += " " + c + " |", html += "<td>" + c + "</td>";
    md += "\n";
    html += "</tr>\n";
  }
  md += "\nAll stages together: " + fmt("%.1f", total) + " s of wall time (cached stages count what they cost when they ran).\n";
  html += "</table>\n<p>All stages together: " + fmt("%.1f", total) + " s of wall time.</p>\n</body></html>\n";
  write_file_atomic(out + "/report.md", md);
  write_file_atomic(out + "/report.html", html);
}

}  // namespace trex::recipe
