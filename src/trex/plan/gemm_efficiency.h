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
//
// Why h depends on the precision and the device: the curve stands for the fixed time of each
// output tile (prologue loads, epilogue store, the last partial wave) against the tile's
// multiply time, which is proportional to the dimension over the per-core tensor rate. A
// fixed cost t0 against x / r gives x / (x + r t0): the half dimension grows in proportion to
// the per-core rate r. So an FP8 GEMM on Hopper (twice the BF16 rate on the same SMs) needs
// twice the dimension of a BF16 GEMM to reach the same share of its peak, and A100's BF16
// (2.9 TFLOPS per SM) about a fifth of the dimension of H800's FP8 (15 TFLOPS per SM), where
// the curve was measured (DeepGEMM). NVIDIA's "Matrix Multiplication Background" guide
// describes the tile and wave quantization behind the fixed cost.
#pragma once

namespace trex::plan {

inline double gemm_dim_factor(double x, double h) { return x / (x + h); }

inline double gemm_shape_factor(double m, double n, double k, double h) {
  if (h <= 0) return 1;
  double ref = gemm_dim_factor(8192, h);
  double f = gemm_dim_factor(m, h) * gemm_dim_factor(n, h) * gemm_dim_factor(k, h) / (ref * ref * ref);
  return f < 1 ? f : 1;
}

// The half dimension of a GEMM running at `core_flops` per core (its precision's dense peak
// over the device's cores) when the cluster states `h` measured at `h_core_flops` per core;
// h_core_flops = 0 leaves h as stated.
inline double gemm_half_dim_for(double h, double h_core_flops, double core_flops) {
  if (h <= 0 || h_core_flops <= 0 || core_flops <= 0) return h;
  return h * core_flops / h_core_flops;
}

}  // namespace trex::plan
