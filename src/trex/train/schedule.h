// The learning-rate schedule: linear warmup, then cosine decay to a floor.
//
//   step s (1-based), W warmup steps, N total steps:
//   s <= W:      lr = peak * s / W
//   W < s <= N:  lr = min + (peak - min) * (1 + cos(pi * (s - W) / (N - W))) / 2
//   s > N:       lr = min
// "constant" keeps peak after warmup. The value depends on the step number alone, so a resumed
// run recomputes it exactly.
#pragma once

#include <cstdint>
#include <string>

namespace trex::train {

struct Schedule {
  std::string kind = "cosine";  // cosine | constant
  double peak_lr = 3e-3;
  double min_lr = 3e-4;
  int64_t warmup = 0;
  int64_t total = 1;

  double lr(int64_t step) const;
};

}  // namespace trex::train
