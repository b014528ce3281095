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


// The level just below l (nullptr for the innermost): the domain a ring crosses l from.
const LinkLevel* level_below(const Cluster& c, const LinkLevel& l) {
  for (size_t i = 1; i < c.links.size(); ++i)
    if (&c.links[i] == &l) return &c.links[i - 1];
  return nullptr;
}

// Bandwidth of a ring collective (all-reduce, all-gather, reduce-scatter) over level l. A
// group with k members in each domain of the level below runs k rings (NCCL channels) side
// by side, each entering and leaving a domain once through the port of one member: the
// domain's traffic on level l splits over k ports, while every member still moves the
// whole ring volume on the level below. So the bandwidth is min(k x level l, level below);
// k = 1 (one member per node, e.g. the DP group of TP 8) leaves level l's own bandwidth.
double ring_bw(const Cluster& c, const LinkLevel& l, long g, long extent) {
  double b = bw(c, l, double(extent));
  const LinkLevel* below = level_below(c, l);
  if (below == nullptr) return b;
  long k = ring_members_per_domain(g, extent, below->group_size);
  if (k <= 1) return b;
  return std::min(double(k) * b, bw(c, *below, double(below->group_size)));
}
}  // namespace

long ring_members_per_domain(long g, long extent, long domain) {
  if (g <= 1 || domain <= 1) return 1;
  long stride = std::max<long>(1, extent / g);  // the group's ranks lie `stride` apart
  return std::clamp<long>(domain / stride, 1, g);
}

double all_reduce_s(const Cluster& c, long g, long extent, double bytes) {
  if (g <= 1 || bytes <= 0) return 0;
  const LinkLevel& l = c.level_for_extent(extent);
  double gd = double(g);
  return c.eff.comm_launch_s + 2 * (gd - 1) * l.latency_s + 2 * (gd - 1) / gd * bytes / ring_bw(c, l, g, extent);
}

double all_gather_s(const Cluster& c, long g, long extent, double bytes) {
  if (g <= 1 || bytes <= 0) return 0;
  const LinkLevel& l = c.level_for_extent(extent);
  double gd = double(g);
  return c.eff.comm_launch_s + (gd - 1) * l.latency_s + (gd - 1) / gd * bytes / ring_bw(c, l, g, extent);
}

double broadcasts_s(const Cluster& c, long g, long extent, double bytes, long count) {
  if (g <= 1 || bytes <= 0 || count <= 0) return 0;
  const LinkLevel& l = c.level_for_extent(extent);
  return double(count) * (c.eff.comm_launch_s + double(g - 1) * l.latency_s) + bytes / ring_bw(c, l, g, extent);
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
