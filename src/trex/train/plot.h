// The loss curve of a run as a self-contained SVG (no scripts, no external fonts or styles):
// loss against step, skipped steps marked, axes with round-number ticks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trex::train {

struct LossPoint {
  int64_t step = 0;
  double loss = 0;     // non-finite: a skipped step, drawn as a red tick on the x axis
};

// The SVG text. An empty series gives an empty plot with its title.
std::string loss_curve_svg(const std::vector<LossPoint>& points, const std::string& title);

}  // namespace trex::train
