#include "trex/plan/collectives.h"

#include <algorithm>

namespace trex::plan {

namespace {
double bw(const LinkLevel& l) { return l.bw_unidir * l.efficiency; }
}  // namespace

double all_reduce_s(const Cluster& c, long g, long extent, double bytes) {
  if (g <= 1 || bytes <= 0) return 0;
  const LinkLevel& l = c.level_for_extent(extent);
  double gd = double(g);
  return c.eff.comm_launch_s + 2 * (gd - 1) * l.latency_s + 2 * (gd - 1) / gd * bytes / bw(l);
}

double all_gather_s(const Cluster& c, long g, long extent, double bytes) {
  if (g <= 1 || bytes <= 0) return 0;
  const LinkLevel& l = c.level_for_extent(extent);
  double gd = double(g);
  return c.eff.comm_launch_s + (gd - 1) * l.latency_s + (gd - 1) / gd * bytes / bw(l);
}

double all_to_all_s(const Cluster& c, long g, long stride, double bytes) {
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
      double t = double(here) / gd * bytes / bw(l) + double(here) * l.latency_s;
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
  return c.eff.comm_launch_s + l.latency_s + bytes / bw(l);
}

}  // namespace trex::plan
