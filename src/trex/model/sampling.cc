// sample_token: see sampling.h.
#include "trex/model/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "trex/util/error.h"

namespace trex::model {

int32_t sample_token(std::span<const float> logits, double temperature, double top_p, double u,
                     std::span<const int32_t> excluded) {
  const int64_t V = int64_t(logits.size());
  if (V == 0) throw InputError::field("logits", "empty");
  if (!excluded.empty()) {
    // A copy with the excluded ids at -inf: every path below then treats them as the contract
    // says (greedy passes over them, the softmax gives them exactly 0, the nucleus sorts them
    // last). Only requests that exclude ids (number slots) pay for the copy.
    std::vector<float> masked(logits.begin(), logits.end());
    for (int32_t id : excluded)
      if (id >= 0 && id < V) masked[size_t(id)] = -INFINITY;
    if (std::all_of(masked.begin(), masked.end(), [](float v) { return v == -INFINITY; }))
      throw InputError::field("excluded", "every one of the " + std::to_string(V) + " ids is excluded");
    return sample_token(masked, temperature, top_p, u);
  }
  if (temperature <= 0) {
    int64_t best = 0;
    for (int64_t i = 1; i < V; ++i)
      if (logits[size_t(i)] > logits[size_t(best)]) best = i;
    return int32_t(best);
  }
  // Unnormalised probabilities in double, by id.
  float mx = logits[0];
  for (int64_t i = 1; i < V; ++i) mx = std::max(mx, logits[size_t(i)]);
  std::vector<double> p(static_cast<size_t>(V));
  double z = 0;
  for (int64_t i = 0; i < V; ++i) {
    p[size_t(i)] = std::exp((double(logits[size_t(i)]) - double(mx)) / temperature);
    z += p[size_t(i)];
  }
  if (top_p >= 1) {  // every token, in id order: no sort needed
    const double target = u * z;
    double acc = 0;
    for (int64_t i = 0; i < V; ++i) {
      acc += p[size_t(i)];
      if (target < acc) return int32_t(i);
    }
    // Only rounding gets here: the last id with any mass (never an excluded one).
    for (int64_t i = V - 1; i > 0; --i)
      if (p[size_t(i)] > 0) return int32_t(i);
    return 0;
  }
  // The nucleus: the most likely tokens (ties to the lower id, a strict order, so a partial
  // sort is deterministic), sorted only as far as needed: 64 first, then 4x more each time.
  std::vector<int32_t> order(static_cast<size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  auto before = [&](int32_t a, int32_t b) {
    return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
  };
  int64_t keep = V;
  for (int64_t k = std::min<int64_t>(V, 64);; k = std::min<int64_t>(V, 4 * k)) {
    std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    double mass = 0;
    int64_t j = 0;
    for (; j < k; ++j) {
      mass += p[size_t(order[size_t(j)])] / z;
      if (mass >= top_p) break;
    }
    if (j < k) {
      keep = j + 1;
      break;
    }
    if (k == V) break;
  }
  double kept = 0;
  for (int64_t j = 0; j < keep; ++j) kept += p[size_t(order[size_t(j)])];
  const double target = u * kept;
  double acc = 0;
  for (int64_t j = 0; j < keep; ++j) {
    acc += p[size_t(order[size_t(j)])];
    if (target < acc) return order[size_t(j)];
  }
  // Only rounding gets here: the last of the nucleus with any mass (excluded ids sort last).
  for (int64_t j = keep - 1; j > 0; --j)
    if (p[size_t(order[size_t(j)])] > 0) return order[size_t(j)];
  return order[0];
}

}  // namespace trex::model
