// GEMM efficiency as a function of shape. A cluster's `matmul` efficiency is what large GEMMs
// reach (all three dimensions at 8192 and above); smaller dimensions fill fewer tiles and
// waves, so the efficiency falls with each of them. trex uses one saturating curve per
// dimension, x / (x + h), with the half-efficiency dimension h from the cluster file
// (`gemm_half_dim`, sources there and in docs/plan.md), normalised to 1 at 8192:
//
//   shape(m, n, k) = min(1, c_h(m) c_h(n) c_hk(k) / (c_h(8192)^2 c_hk(8192))),   c_h(x) = x / (x + h)
//
// The inner dimension has its own half dimension hk (`gemm_half_dim_k`; h where unstated): a
// tile's prologue and epilogue are paid once against its k loop, so a short k loses more than a
// narrow m or n (session 22: DeepGEMM's README, H800 FP8, 4096 rows: k 2048 reaches 1025
// TFLOPS and k 512 590 where n 2112 at k 7168 reaches 1058; h = 384, hk = 768 take the log
// error over its 18 published shapes from 21% to 8%, with a grouped GEMM's m as below).
// A grouped GEMM (every local expert in one kernel) fills the SMs with all its experts' tiles,
// so its m curve sees all its rows (grouped_gemm_curve_rows); one kernel per expert runs each
// expert's rows alone. DeepGEMM's masked layout, 4 groups of 256 rows (n 4096, k 7168), reaches
// 932 TFLOPS, 0.72 of its 4096-row GEMM of the same n and k (1304): the per-expert curve put it
// at 588, all its rows at 1069.
// Tile padding of an expert's last rows is not charged (ASSUMPTION: DeepGEMM aligns each
// expert's rows to its block; the validation rows give each expert 512 rows or more).
// h = 0 turns the curve off (factor 1).
//
// Why h depends on the precision and the device: the curve stands for the fixed time of each
// output tile (prologue loads, epilogue store, and on average the last partial wave: the rates
// it was fitted on include their waves, so for a wide GEMM on a cluster with a tile set it
// overlaps tile_wave_factor below by at most its own few percent; docs/plan.md) against the tile's
// multiply time, which is proportional to the dimension over the per-core tensor rate. A
// fixed cost t0 against x / r gives x / (x + r t0): the half dimension grows in proportion to
// the per-core rate r. So an FP8 GEMM on Hopper (twice the BF16 rate on the same SMs) needs
// twice the dimension of a BF16 GEMM to reach the same share of its peak, and A100's BF16
// (2.9 TFLOPS per SM) about a fifth of the dimension of H800's FP8 (15 TFLOPS per SM), where
// the curve was measured (DeepGEMM). NVIDIA's "Matrix Multiplication Background" guide
// describes the tile and wave quantization behind the fixed cost.
//
// Tile and wave quantization (the same guide, "Dimension Quantization Effects"): the library
// splits the m x n output into tiles, one per thread block, and runs them in waves of one tile
// per SM. A dimension that is not a multiple of the tile pads the last row or column of tiles
// (tile quantization), and a tile count that is not a multiple of the SMs leaves SMs idle in
// the last wave (wave quantization): useful / (waves x SMs x tile area) of the time is work.
// The library picks a tile per shape; trex takes the tile of the cluster's set (`gemm_tiles`)
// that wastes least, all tiles assumed equally fast (the guide: larger tiles are somewhat more
// efficient, so this is the smallest loss the set allows). The factor is normalised to the
// 8192-square GEMM the cluster's large-GEMM efficiency stands for, and the backward's two
// GEMMs (m x k input gradient, k x n weight gradient) count with the forward's m x n output.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace trex::plan {

// Share of `sms` SMs x waves doing useful work for `groups` independent m x n outputs (a
// grouped GEMM's experts) cut into tm x tn tiles.
inline double wave_efficiency(double m, double n, double tm, double tn, double sms, double groups = 1) {
  double tiles = groups * std::ceil(m / tm) * std::ceil(n / tn);
  double waves = std::ceil(tiles / sms);
  return groups * m * n / (waves * sms * tm * tn);
}

// The best tile of the set for one output (1 without tiles or SMs).
inline double best_tile_efficiency(double m, double n, const std::vector<std::array<long, 2>>& tiles, double sms,
                                   double groups = 1) {
  if (tiles.empty() || sms <= 0 || m <= 0 || n <= 0) return 1;
  double best = 0;
  for (const std::array<long, 2>& t : tiles)
    best = std::max(best, wave_efficiency(m, n, double(t[0]), double(t[1]), sms, groups));
  return best;
}

// The smallest tile side of the set (0 without tiles).
inline double smallest_tile_side(const std::vector<std::array<long, 2>>& tiles) {
  double side = 0;
  for (const std::array<long, 2>& t : tiles) {
    double s = double(std::min(t[0], t[1]));
    if (side == 0 || s < side) side = s;
  }
  return side;
}

// One output's tile and wave efficiency, or 1 for an output narrower than the smallest tile
// side of the set. ASSUMPTION: for such an output (a MoE router's few expert columns, a
// projection to a handful of outputs) the library does not run the set's large tiles (cuBLAS
// picks a narrow tile or splits k), so their padding is not what it pays; trex has no tile set
// for those kernels, and the small-dimension curve (gemm_shape_factor) alone charges the
// narrow side, as it did before tiles were stated.
inline double output_tile_efficiency(double m, double n, const std::vector<std::array<long, 2>>& tiles, double sms,
                                     double groups) {
  if (std::min(m, n) < smallest_tile_side(tiles)) return 1;
  return best_tile_efficiency(m, n, tiles, sms, groups);
}

// Tile and wave quantization of a GEMM with forward output m x n and inner dimension k, over
// its forward and two backward GEMMs (equal FLOPs: the harmonic mean of their efficiencies;
// `groups` outputs of each, one per expert, in a grouped GEMM; an output narrower than the
// smallest tile counts 1, output_tile_efficiency), relative to the 8192-square GEMM; never
// above 1.
inline double tile_wave_factor(double m, double n, double k, const std::vector<std::array<long, 2>>& tiles, double sms,
                               double groups = 1) {
  if (tiles.empty() || sms <= 0) return 1;
  auto three = [&](double a, double b, double c, double g) {
    return 3 / (1 / output_tile_efficiency(a, b, tiles, sms, g) + 1 / output_tile_efficiency(a, c, tiles, sms, g) +
                1 / output_tile_efficiency(c, b, tiles, sms, g));
  };
  double f = three(m, n, k, groups) / three(8192, 8192, 8192, 1);
  return f < 1 ? f : 1;
}

// Misaligned 16-bit GEMMs (a stack's tensor_core_align_bytes, stack.h). An effective rate, not
// a known mechanism: on BigScience's 2022 stack (Megatron-DeepSpeed, PyTorch 1.10 / CUDA 11.3,
// A100) runs whose head dimension's bytes were not a multiple of 16 ran 25-42% slower than their
// aligned siblings, and trex charges a GEMM whose inner (k) or output (n) dimension misses the
// multiple at the device's non-tensor FP32 peak x matmul, a rate chosen with those rows in view.
// cuBLAS 11 and later do not require the alignment for Tensor Cores (its "Tensor Core Usage"
// section: they are used "wherever possible", the 16-byte rules give the most performance;
// NVIDIA DU-09799-001 section 2.2 calls it a requirement only before cuBLAS 11.0), and on
// cuBLAS 12 an unaligned bf16 GEMM runs an align-1 Tensor Core kernel at about 74% of the
// aligned rate (pytorch/pytorch#181718), so no other stack sets it. For the unfused attention's
// batched products k or n is the head dimension, and the per-head batch stride is a multiple of
// it, so a head dimension of 150 (2 x 150 = 300 B) misses it in all six (forward QK^T and PV,
// their four backward products). align_bytes <= 0: no rule (every GEMM aligned).
inline bool tensor_core_aligned(double elems, double elem_bytes, double align_bytes) {
  if (align_bytes <= 0) return true;
  return std::fmod(elems * elem_bytes, align_bytes) == 0;
}

inline double gemm_dim_factor(double x, double h) { return x / (x + h); }

// The rows the m curve sees in `kernels` launches over `experts` experts' `rows` in all: one
// grouped kernel, all of them; one kernel per expert, each expert's share.
inline double grouped_gemm_curve_rows(double rows, double experts, double kernels) {
  return kernels <= 1 ? rows : rows / experts;
}

// hk < 0: the inner dimension takes h.
inline double gemm_shape_factor(double m, double n, double k, double h, double hk = -1) {
  if (h <= 0) return 1;
  if (hk < 0) hk = h;
  double ref = gemm_dim_factor(8192, h);
  double f = gemm_dim_factor(m, h) * gemm_dim_factor(n, h) * gemm_dim_factor(k, hk) /
             (ref * ref * gemm_dim_factor(8192, hk));
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
