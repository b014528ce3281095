// Interval arithmetic on a trace's timeline: how much of a set of windows (steps, or the span of
// the device's activity) some intervals (kernels) cover. Idle time is window minus covered.
#pragma once

#include <utility>
#include <vector>

namespace trex::profile {

using Interval = std::pair<double, double>;  // [begin, end), microseconds

// Total length of the union of `intervals` inside the union of `windows`.
double covered_us(std::vector<Interval> intervals, std::vector<Interval> windows);

// Total length of the union of `windows`.
double union_us(std::vector<Interval> windows);

}  // namespace trex::profile
