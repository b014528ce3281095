// The anatomy of a training step (the report's Fig. 6), from one or more traces:
//   (a) the heavy head: kernels by share of kernel time;
//   (b) launch fragmentation: the share of launches against the share of time of the
//       non-matmul operators, and the tail of launches shorter than `tail_us` (20 us);
//   (c) duration-weighted pipe ratios, where the trace has them (msprof);
//   (d) each kernel's regime (the roofline of the given hardware from the trace's flops and
//       bytes; the largest pipe ratio, spec section 7, where the trace has ratios) and its route.
// Plus the step's time by category (Fig. 2), with idle time: what no kernel covers.
//
// Heavy head, stated once here and in docs/profile.md: take kernels in order of total time until
// those taken cover `head_cover` (80%) of kernel time, passing over (neither taking nor counting)
// the kernels whose median launch is shorter than `tail_us` (their time is many small launches:
// fragmentation, not tiling), frames (spans whose children take most of their time), and
// communication (scheduled, not tiled). Routes: head -> "tune tiling"; communication -> "overlap
// / schedule"; everything else -> "fuse / re-express".
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trex/profile/kernel_category.h"
#include "trex/profile/kernel_trace.h"
#include "trex/profile/roofline.h"

namespace trex::profile {

struct AnatomyOptions {
  double head_cover = 0.8;  // in (0, 1]
  double tail_us = 20;      // launches shorter than this form the fragmented tail
  std::optional<Roofline> roofline;
};

inline constexpr const char* kRouteTuneTiling = "tune tiling";
inline constexpr const char* kRouteFuse = "fuse / re-express";
inline constexpr const char* kRouteOverlap = "overlap / schedule";

// All launches of one kernel: one name, or for msprof one operator type.
struct KernelSummary {
  std::string name;         // the kernel name, or msprof's OP Type
  KernelCategory category = KernelCategory::kOther;
  long launches = 0;        // launches proper (a frame around child spans is not one)
  double total_us = 0;
  double share = 0;         // of all kernel time
  double launch_share = 0;  // of all launches
  double median_us = 0;     // median launch
  long short_launches = 0;  // launches under tail_us
  double flops = 0, bytes = 0;  // totals; 0 when the trace does not say
  std::map<std::string, double> pipe_ratios;  // duration-weighted over its launches
  // Regime: "compute-bound", "memory-bound" (roofline); "cube-bound", "vector-bound",
  // "load-bound", "store-bound", "scalar-bound", "overlap-bound" (pipe ratios); "unknown".
  std::string regime = "unknown";
  std::string regime_basis;  // "roofline", "roofline (flops only)", "pipe aiv_mte2_ratio 0.71", or ""
  double intensity = 0;      // FLOP/byte, with flops and bytes
  double roof_fraction = 0;  // the roof's time over the measured time, with a roofline
  bool heavy_head = false;
  std::string route;
};

struct Anatomy {
  std::vector<std::string> traces;  // "path (format)"
  std::vector<std::string> notes;
  long launches = 0;
  double kernel_us = 0;     // sum of kernel time (overlapping streams count twice)
  double window_us = 0;     // the observed timeline: steps, or the device's active span
  double busy_us = 0;
  double idle_us = 0;       // window - busy
  long steps = 0;
  std::vector<KernelSummary> kernels;  // by total time, largest first
  // (a)
  double head_cover = 0;
  long head_kernels = 0;
  double head_share = 0;
  // (b)
  double tail_us = 0;
  long non_matmul_launches = 0;
  double non_matmul_launch_share = 0, non_matmul_time_share = 0;
  long short_launches = 0;
  double short_launch_share = 0, short_time_share = 0;
  // (c): over the launches that carry ratios
  std::map<std::string, double> pipe_ratios;
  double movement_over_vector = 0;  // (aiv_mte2 + aiv_mte3) / aiv_vec; 0 without them
  // categories, kernel time per category, then idle
  double category_us[kKernelCategories] = {};
  std::optional<Roofline> roofline;
};

// REQUIRES: at least one trace, each with at least one kernel (the readers ensure it).
Anatomy analyze(const std::vector<KernelTrace>& traces, const AnatomyOptions& options = {});

}  // namespace trex::profile
