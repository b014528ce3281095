#include "trex/train/schedule.h"

#include <cmath>
#include <numbers>

namespace trex::train {

double Schedule::lr(int64_t step) const {
  if (warmup > 0 && step <= warmup) return peak_lr * double(step) / double(warmup);
  if (kind == "constant") return peak_lr;
  if (step > total || total <= warmup) return min_lr;
  double progress = double(step - warmup) / double(total - warmup);
  return min_lr + (peak_lr - min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
}

}  // namespace trex::train
