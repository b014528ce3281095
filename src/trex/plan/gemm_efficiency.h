// GEMM efficiency as a function of shape. A cluster's `matmul` efficiency is what large GEMMs
// reach (all three dimensions at 8192 and above); smaller dimensions fill fewer tiles and
// waves, so the efficiency falls with each of them. trex uses one saturating curve per
// dimension, x / (x + h), with the half-efficiency dimension h from the cluster file
// (`gemm_half_dim`, sources there and in docs/plan.md), normalised to 1 at 8192:
//
//   shape(m, n, k) = min(1, c(m) c(n) c(k) / c(8192)^3),   c(x) = x / (x + h)
//
// For an expert's grouped GEMM m is the rows one expert receives, which is what makes
// fine-grained experts with few tokens each run far below the peak (the small-M curve).
// h = 0 turns the curve off (factor 1).
#pragma once

namespace trex::plan {

inline double gemm_dim_factor(double x, double h) { return x / (x + h); }

inline double gemm_shape_factor(double m, double n, double k, double h) {
  if (h <= 0) return 1;
  double ref = gemm_dim_factor(8192, h);
  double f = gemm_dim_factor(m, h) * gemm_dim_factor(n, h) * gemm_dim_factor(k, h) / (ref * ref * ref);
  return f < 1 ? f : 1;
}

}  // namespace trex::plan
