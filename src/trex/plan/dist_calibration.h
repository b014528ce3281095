// The collective times measured on a machine by bench/dist_bench: for each collective, a fit
// time = latency_s + bytes / bandwidth_Bps (bytes per rank), over `ranks` ranks. The file is
// TOML with one [dist_calibration] table and a sub-table per collective (all_to_all,
// all_reduce, all_gather). A planner can set a link level's latency and bandwidth from it.
#pragma once

#include <string>

#include "trex/plan/cluster.h"

namespace trex::plan {

struct CollectiveFit {
  double latency_s = 0;
  double bandwidth_Bps = 0;
  double seconds(double bytes) const { return latency_s + bytes / bandwidth_Bps; }
};

struct DistCalibration {
  std::string file;
  long ranks = 0;
  std::string host;
  double load = 0;  // load average while measured
  CollectiveFit all_to_all, all_reduce, all_gather;
};

// Reads and checks the file (every collective present, latency >= 0, bandwidth > 0). Throws
// InputError naming the file, line and field.
DistCalibration load_dist_calibration(const std::string& path);

// Sets the link level that the measured ranks shared (the innermost one whose group holds
// `ranks` devices) to the all-to-all fit: latency and bandwidth as measured, efficiency 1 (the
// fit already is what the collective achieves). The all-to-all is the MoE exchange the planner
// times on that level; its ring all-reduce follows from the same link. Throws InputError naming
// the calibration file when no level of the cluster holds that many devices (a one-device
// cluster has no link to calibrate).
void calibrate_links_from_dist(Cluster& c, const DistCalibration& d);

}  // namespace trex::plan
