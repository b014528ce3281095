// A cluster description: how many devices of which kind, how they are linked, what host memory
// and host link each device has, and the efficiency factors the time model applies.
// One TOML file under configs/cluster/ (format in docs/plan.md); the device itself is a
// hardware description of configs/hw/ that the cluster file names by a relative path.
//
// Links are levels, innermost first: level i joins groups of group_size devices (2 dies, 8 in
// a node, 384 in a SuperPOD...) at bw_unidir bytes/s per device, with a per-message latency and
// an achieved fraction (efficiency). A collective among devices that all lie in one group of
// level i runs at level i; the outermost level must hold every device, otherwise the cluster
// is impossible and refused.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "trex/core/hw_description.h"

namespace trex::plan {

struct LinkLevel {
  std::string name;
  long group_size = 0;           // devices in one group at this level
  double bw_unidir = 0;          // bytes/s per device, one direction
  double latency_s = 0;          // per message (alpha)
  double efficiency = 1;         // achieved fraction of bw_unidir
  std::string source;
};

// Fractions of the roofs that real kernels reach, and fixed costs. Each is stated with its
// source in the cluster file (or taken from the device's [calibration]); the planner never
// adjusts them per run.
struct Efficiency {
  double matmul = 0.7;       // large GEMMs, fraction of the dense 16-bit peak
  double attention = 0.5;    // attention core (flash-style), fraction of the same peak
  double memory = 0.6;       // memory-bound kernels, fraction of HBM bandwidth
  double launch_s = 5e-6;    // per kernel (matrix or vector): the floor of any kernel's time
  double comm_launch_s = 10e-6;  // per collective call, on top of alpha-beta
  double fp8_matmul = 0.7;   // large FP8 GEMMs, fraction of the FP8 peak (well below 2x BF16 in practice)
  double gemm_half_dim = 0;  // GEMM shape curve: the dimension at which a GEMM reaches half efficiency (0: off)
  // Tensor-core FLOP/s per core (SM, Cube) at which gemm_half_dim was measured; 0: use it
  // unscaled. Otherwise each GEMM's half dimension scales with its own per-core rate
  // (gemm_efficiency.h, gemm_half_dim_for).
  double gemm_half_dim_core_flops = 0;
  // The inner dimension's own half dimension (k), at the same per-core rate; 0: gemm_half_dim.
  double gemm_half_dim_k = 0;
  // Output tiles (rows x columns) the device's GEMM library picks from, as {m, n} pairs; empty:
  // no tile and wave quantization (gemm_efficiency.h, tile_wave_factor).
  std::vector<std::array<long, 2>> gemm_tiles;
  std::string source;
};

// A published measurement of a hierarchical EP dispatcher inside the scale-up domain (one
// `[[ep_dispatcher]]` table of the cluster file): its algorithm bandwidth at `ranks` EP ranks
// with `sms` SMs, as DeepEP's and HybridEP's tests define it: the bytes of the tokens a rank
// receives, one copy per (token, destination rank) with its own tokens included, over the time
// the call takes (tests/test_intranode.py, tests/test_hybrid_ep.py: recv_x.numel() x 2 for
// BF16; FP8 counts its scales too). The combine moves the same bytes back.
struct DispatcherRate {
  std::string dispatcher;           // "deepep" or "hybridep"
  long ranks = 0;                   // EP ranks of the measurement
  long sms = 0;                     // SMs the kernels ran on
  double dispatch_bf16 = 0;         // bytes/s, BF16 dispatch
  double dispatch_fp8 = 0;          // bytes/s, FP8 dispatch
  double combine = 0;               // bytes/s, BF16 combine
  std::string source;
};

// Scale-dependent losses (scale_losses.h), each with its source in the cluster file.
struct ScaleLosses {
  double straggler_cv = 0;           // spread of per-device step times (coefficient of variation)
  double bw_loss_per_doubling = 0;   // scale-out bandwidth lost per doubling of the nodes a collective spans
  std::string source;
};

struct Cluster {
  std::string name;
  std::string file;
  std::string source;
  core::HwDescription device;
  std::string device_file;
  long nodes = 0;
  long devices_per_node = 0;
  std::vector<LinkLevel> links;  // innermost first; the last holds every device
  double peak_flops = 0;         // dense 16-bit peak per device (from the device file)
  double hbm_bytes = 0;          // device memory capacity
  double hbm_bw = 0;             // device memory bandwidth, bytes/s
  double reserved_bytes = 0;     // device memory the runtime and allocator keep (context, fragmentation)
  // Where reserved_bytes comes from; empty: an assumption with no published figure (the report
  // says so beside the reserve; docs/plan.md, "reserve").
  std::string reserved_source;
  double host_bytes_per_device = 0;  // host memory available to one device's swapped state
  double host_link_bw = 0;           // host <-> device, bytes/s per device, each direction
  std::string host_source;
  Efficiency eff;
  ScaleLosses scale;
  // Measured dispatcher rates inside the innermost link level (empty: every dispatcher runs at
  // that level's bandwidth and efficiency, as the plain all-to-all).
  std::vector<DispatcherRate> ep_dispatch_rates;

  long devices() const { return nodes * devices_per_node; }
  // The measurement of `dispatcher` ("deepep", "hybridep") at the rank count nearest `ep` (the
  // larger of two equally near), or nullptr when the file has none.
  const DispatcherRate* dispatch_rate(const std::string& dispatcher, long ep) const;
  // The innermost level whose groups hold `extent` consecutive ranks (extent >= 1).
  const LinkLevel& level_for_extent(long extent) const;
};

// Reads and checks a cluster file. Throws InputError naming file, line and field.
Cluster load_cluster(const std::string& path);

// A one-device "cluster" from a hardware description alone (what `trex hw probe` writes for
// this machine): one node of one device, no links needed. For a CPU the peak is the fp32 one
// (CPUs without bf16 matrix units compute bf16 at the fp32 rate). Efficiencies come from the
// file's [calibration] or, absent that, stated defaults (matmul 0.8, attention 0.5, memory 1.0
// of the measured STREAM bandwidth, 2 us per parallel region); calibrate_from_kernels_bench()
// replaces them with measured ones.
Cluster cluster_from_device(const std::string& hw_path);

// Loads `path` as a cluster file, or as a hardware description when it has no [cluster] table.
Cluster load_cluster_or_device(const std::string& path);

// Sets the efficiency factors from the JSON that `trex kernels bench --json` prints on this
// machine: matmul = gemm GFLOP/s over the fp32 peak it states, attention = sparse-attention
// forward GFLOP/s over the same, memory = median over the memory-bound kernels of GB/s over its
// STREAM triad bandwidth. Throws InputError when the file lacks what it needs.
void calibrate_from_kernels_bench(Cluster& c, const std::string& json_path);

// The same cluster with another node count (validation runs and --nodes). Throws InputError
// when the outermost link level cannot join that many devices.
void set_nodes(Cluster& c, long nodes);

}  // namespace trex::plan
