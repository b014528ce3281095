#include "trex/profile/timeline.h"

#include <algorithm>

namespace trex::profile {
namespace {

// Sorted, disjoint, non-empty intervals with the same union.
std::vector<Interval> merged(std::vector<Interval> v) {
  std::erase_if(v, [](const Interval& i) { return !(i.second > i.first); });
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}

}  // namespace

double union_us(std::vector<Interval> windows) {
  double total = 0;
  for (const Interval& w : merged(std::move(windows))) total += w.second - w.first;
  return total;
}

double covered_us(std::vector<Interval> intervals, std::vector<Interval> windows) {
  std::vector<Interval> a = merged(std::move(intervals)), w = merged(std::move(windows));
  double total = 0;
  size_t j = 0;
  for (const Interval& x : a) {
    while (j < w.size() && w[j].second <= x.first) ++j;
    for (size_t k = j; k < w.size() && w[k].first < x.second; ++k)
      total += std::max(0.0, std::min(x.second, w[k].second) - std::max(x.first, w[k].first));
  }
  return total;
}

}  // namespace trex::profile
