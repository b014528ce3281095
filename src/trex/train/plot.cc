#include "trex/train/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace trex::train {
namespace {

constexpr double kWidth = 720, kHeight = 420;
constexpr double kLeft = 64, kRight = 20, kTop = 36, kBottom = 48;

// A "nice" tick spacing (1, 2 or 5 times a power of ten) giving about `count` ticks.
double nice_step(double range, int count) {
  if (!(range > 0)) return 1;
  double raw = range / count;
  double p = std::pow(10.0, std::floor(std::log10(raw)));
  double f = raw / p;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else o += c;
  }
  return o;
}

}  // namespace

std::string loss_curve_svg(const std::vector<LossPoint>& points, const std::string& title) {
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  bool any = false;
  for (const LossPoint& p : points) {
    if (!std::isfinite(p.loss)) continue;
    if (!any) {
      x0 = x1 = double(p.step);
      y0 = y1 = p.loss;
      any = true;
    }
    x0 = std::min(x0, double(p.step));
    x1 = std::max(x1, double(p.step));
    y0 = std::min(y0, p.loss);
    y1 = std::max(y1, p.loss);
  }
  for (const LossPoint& p : points) x1 = std::max(x1, double(p.step));
  if (x1 <= x0) x1 = x0 + 1;
  double ys = nice_step(y1 - y0 > 0 ? y1 - y0 : 1, 6);
  y0 = std::floor(y0 / ys) * ys;
  y1 = std::ceil(y1 / ys) * ys;
  if (y1 <= y0) y1 = y0 + ys;
  double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto X = [&](double s) { return kLeft + (s - x0) / (x1 - x0) * pw; };
  auto Y = [&](double l) { return kTop + (y1 - l) / (y1 - y0) * ph; };

  std::string s;
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", kWidth) + "\" height=\"" +
       fmt("%.0f", kHeight) + "\" viewBox=\"0 0 " + fmt("%.0f", kWidth) + " " + fmt("%.0f", kHeight) +
       "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + fmt("%.1f", kWidth / 2) + "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" +
       escape(title) + "</text>\n";
  // Grid and ticks.
  for (double v = y0; v <= y1 + ys * 1e-6; v += ys) {
    std::string y = fmt("%.1f", Y(v));
    s += "<line x1=\"" + fmt("%.1f", kLeft) + "\" y1=\"" + y + "\" x2=\"" + fmt("%.1f", kLeft + pw) + "\" y2=\"" + y +
         "\" stroke=\"#e0e0e0\"/>\n";
    s += "<text x=\"" + fmt("%.1f", kLeft - 6) + "\" y=\"" + fmt("%.1f", Y(v) + 4) + "\" text-anchor=\"end\">" +
         fmt("%g", std::round(v / ys) * ys) + "</text>\n";
  }
  double xs = nice_step(x1 - x0, 8);
  for (double v = std::ceil(x0 / xs) * xs; v <= x1 + 1e-9; v += xs) {
    std::string x = fmt("%.1f", X(v));
    s += "<line x1=\"" + x + "\" y1=\"" + fmt("%.1f", kTop + ph) + "\" x2=\"" + x + "\" y2=\"" +
         fmt("%.1f", kTop + ph + 5) + "\" stroke=\"black\"/>\n";
    s += "<text x=\"" + x + "\" y=\"" + fmt("%.1f", kTop + ph + 18) + "\" text-anchor=\"middle\">" + fmt("%.0f", v) +
         "</text>\n";
  }
  s += "<rect x=\"" + fmt("%.1f", kLeft) + "\" y=\"" + fmt("%.1f", kTop) + "\" width=\"" + fmt("%.1f", pw) +
       "\" height=\"" + fmt("%.1f", ph) + "\" fill=\"none\" stroke=\"black\"/>\n";
  s += "<text x=\"" + fmt("%.1f", kLeft + pw / 2) + "\" y=\"" + fmt("%.1f", kHeight - 10) +
       "\" text-anchor=\"middle\">step</text>\n";
  s += "<text transform=\"translate(16 " + fmt("%.1f", kTop + ph / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">loss (cross-entropy, nats)</text>\n";
  // The curve: one polyline per run of finite points.
  std::string pts;
  auto flush = [&] {
    if (!pts.empty())
      s += "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"" + pts + "\"/>\n";
    pts.clear();
  };
  for (const LossPoint& p : points) {
    if (!std::isfinite(p.loss)) {
      flush();
      std::string x = fmt("%.1f", X(double(p.step)));
      s += "<line x1=\"" + x + "\" y1=\"" + fmt("%.1f", kTop + ph - 8) + "\" x2=\"" + x + "\" y2=\"" +
           fmt("%.1f", kTop + ph) + "\" stroke=\"#d62728\" stroke-width=\"2\"><title>step " +
           std::to_string(p.step) + " skipped</title></line>\n";
      continue;
    }
    pts += fmt("%.1f", X(double(p.step))) + "," + fmt("%.1f", Y(p.loss)) + " ";
  }
  flush();
  s += "</svg>\n";
  return s;
}

}  // namespace trex::train
