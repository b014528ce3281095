// How a prediction is shown: a terminal table, a JSON object, and an SVG stacked-bar chart of
// step-time breakdowns (one bar per prediction).
#pragma once

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "trex/plan/predict.h"

namespace trex::plan {

// "1.23 TB", "45.6 GB", "789 MB"
std::string bytes_text(double bytes);
// "TP8 PP8 VPP2 DP16 CP1 EP1 ETP1 ZeRO1 recompute=full swap=off"
std::string strategy_text(const Strategy& s);

// The full report of one prediction: memory verdict with breakdown, step-time breakdown, MFU
// under every convention.
std::string format_prediction(const model::ModelConfig& m, const Cluster& c, const Run& r, const Prediction& p);

nlohmann::ordered_json prediction_json(const model::ModelConfig& m, const Cluster& c, const Run& r,
                                       const Prediction& p);

// One stacked bar per labelled prediction: compute, launch, TP, CP, EP, PP, DP, bubble,
// optimizer; a marker line may show a reference time per bar (0 = none). Self-contained SVG.
struct ChartBar {
  std::string label;
  TimeBreakdown time;
  double reference_s = 0;
  std::string note;  // e.g. "MFU 31.2%"
};
std::string breakdown_svg(const std::string& title, const std::vector<ChartBar>& bars);

// The chart for a file: SVG, or (for a name ending in .html) an HTML page holding the SVG and
// a table of the same figures.
std::string breakdown_chart_file(const std::string& path, const std::string& title, const std::vector<ChartBar>& bars);

}  // namespace trex::plan
