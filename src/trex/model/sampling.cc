// sample_token: see sampling.h.
#include "trex/model/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "trex/util/error.h"

namespace trex::model {

int32_t sample_token(std::span<const float> logits, double temperature, double top_p, double u) {
  const int64_t V = int64_t(logits.size());
  if (V == 0) throw InputError::field("logits", "empty");
  if (temperature <= 0) {
    int64_t best = 0;
    for (int64_t i = 1; i < V; ++i)
      if (logits[size_t(i)] > logits[size_t(best)]) best = i;
    return int32_t(best);
  }
  // Probabilities in double, in descending order (ties to the lower id), then the nucleus.
  std::vector<int32_t> order(static_cast<size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
  const double mx = logits[size_t(order[0])];
  std::vector<double> p(static_cast<size_t>(V));
  double z = 0;
  for (int64_t j = 0; j < V; ++j) {
    p[size_t(j)] = std::exp((double(logits[size_t(order[size_t(j)])]) - mx) / temperature);
    z += p[size_t(j)];
  }
  int64_t keep = V;
  if (top_p < 1) {
    double mass = 0;
    for (int64_t j = 0; j < V; ++j) {
      mass += p[size_t(j)] / z;
      if (mass >= top_p) {
        keep = j + 1;
        break;
      }
    }
  }
  double kept = 0;
  for (int64_t j = 0; j < keep; ++j) kept += p[size_t(j)];
  double target = u * kept, acc = 0;
  for (int64_t j = 0; j < keep; ++j) {
    acc += p[size_t(j)];
    if (target < acc) return order[size_t(j)];
  }
  return order[size_t(keep - 1)];
}

}  // namespace trex::model
