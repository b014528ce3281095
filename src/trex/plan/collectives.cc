#include "trex/plan/collectives.h"

#include <algorithm>

#include "trex/plan/scale_losses.h"

namespace trex::plan {

namespace {
// Achieved bandwidth of level l for a group whose consecutive-rank extent is `extent`: the
// scale-out level loses bandwidth with the number of nodes the group spans (scale_losses.h).
double bw(const Cluster& c, const LinkLevel& l, double extent) {
  double b = l.bw_unidir * l.efficiency;
  if (l.group_size > c.devices_per_node && c.devices_per_node > 0)
    b *= scale_bw_factor(c, std::max(1.0, extent / double(c.devices_per_node)));
  return b;
}
}  // namespace

double all_reduce_s(const Cluster& c, long g, long extent, double bytes) {
  if (g <= 1 || bytes <= 0) return 0;
  const LinkLevel& l = c.level_for_extent(extent);
  double gd = double(g);
  return c.eff.comm_launch_s + 2 * (gd - 1) * l.latency_s + 2 * (gd - 1) / gd * bytes / bw(c, l, double(extent));
}

double all_gather_s(const Cluster& c, long g, long extent, double bytes) {
  if (g <= 1 || bytes <= 0) return 0;
  const LinkLevel& l = c.level_for_extent(extent);
  double gd = double(g);
  return c.eff.comm_launch_s + (gd - 1) * l.latency_s + (gd - 1) / gd * bytes / bw(c, l, double(extent));
}

double all_to_all_s(const Cluster& c, long g, long stride, double bytes, double beyond_domain) {
  if (g <= 1 || bytes <= 0) return 0;
  // Peers of one rank: ranks r + stride j, j = 1..g-1. The share reaching each level is the
  // share of peers that lie inside that level's group but not the one below.
  double worst = 0;
  long inside_below = 1;  // peers (self included) inside the level below
  double gd = double(g);
  for (const LinkLevel& l : c.links) {
    long in_level = std::min<long>(g, std::max<long>(1, l.group_size / stride));
    long here = in_level - inside_below;
    if (here > 0) {
      double share = double(here) / gd * (&l == &c.links.front() ? 1.0 : beyond_domain);
      double t = share * bytes / bw(c, l, double(in_level * stride)) + double(here) * l.latency_s;
      worst = std::max(worst, t);
    }
    inside_below = std::max(inside_below, in_level);
    if (in_level >= g) break;
  }
  return c.eff.comm_launch_s + worst;
}

double p2p_s(const Cluster& c, long extent, double bytes) {
  if (bytes <= 0) return 0;
  const LinkLevel& l = c.level_for_extent(extent);
  return c.eff.comm_launch_s + l.latency_s + bytes / bw(c, l, 1);
}

}  // namespace trex::plan
