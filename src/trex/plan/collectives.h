// Alpha-beta times of collectives over a cluster's link levels.
//
// A group of g ranks whose consecutive-rank extent is `extent` (TP: extent TP; DP: TP CP DP,
// since the layout puts TP innermost) runs at the innermost link level whose groups hold that
// extent. Its bandwidth is that level's per-device one-direction bandwidth times its efficiency:
// rings and pairwise exchanges keep every device's link busy, so the outermost level crossed is
// the bottleneck. Formulas (S = bytes each rank contributes or receives in total):
//   all-reduce (ring)          2 (g-1) alpha + 2 (g-1)/g S / B
//   all-gather, reduce-scatter (g-1) alpha +   (g-1)/g S / B      (S = the full gathered size)
//   all-to-all (pairwise)      (g-1) alpha +   (g-1)/g S / B      (S = bytes a rank sends)
//   point-to-point             alpha + S / B
// plus one collective launch cost (cluster efficiency comm_launch_s). A ring over a level
// beyond the innermost with k members in each domain of the level below (a node, or an
// NVL72 rack) runs k rings side by side, one through each member's port: B = min(k x that
// level's bandwidth, the level below's), as NCCL's channels spread over a node's NICs. The
// all-to-all charges the share of traffic leaving each link level at that level's bandwidth
// and takes the slowest level, since NVLink/UB and the scale-out NICs work in parallel.
#pragma once

#include "trex/plan/cluster.h"

namespace trex::plan {

// Members of a group of g ranks with consecutive-rank extent `extent` (stride extent / g)
// inside one domain of `domain` consecutive ranks (at least 1, at most g).
long ring_members_per_domain(long g, long extent, long domain);

double all_reduce_s(const Cluster& c, long g, long extent, double bytes);
double all_gather_s(const Cluster& c, long g, long extent, double bytes);  // = reduce-scatter
// `count` ring broadcasts over the g ranks that together send `bytes` (each owner its part):
// each pays the launch and g - 1 hops of latency (NCCL's ring pipeline, as the all-gather), and
// the pipelined ring carries every byte over each link once.
double broadcasts_s(const Cluster& c, long g, long extent, double bytes, long count);
// `beyond_domain` scales the traffic on the levels above the innermost one (the scale-up
// domain): a dispatcher that sends a token once per remote domain (ep_dispatch.h) moves less.
double all_to_all_s(const Cluster& c, long g, long stride, double bytes, double beyond_domain = 1);
double p2p_s(const Cluster& c, long extent, double bytes);

}  // namespace trex::plan
