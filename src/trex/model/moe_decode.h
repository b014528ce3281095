// The MoE layer's forward for the rows of one decoding step, its work split over the threads
// that run the step (BatchDecoder), so that each expert's weights are read once per step for
// all the rows routed to it, by one thread.
//
// Why not MoeLayer::forward per thread's rows: with the rows split over two threads, each
// thread read every expert its rows chose; at 8 rows and top-2 of 8 experts that is ~5.5 of 8
// experts per thread, so two threads read ~11 experts per layer and step where one pass over
// all rows reads ~7.2 (the routed experts are over half of v4-nano's weights). Here the phases
// are: route (each thread its own rows), then experts (the threads take whole experts, one at a
// time, each over all the rows routed to it, and each shared expert over all the rows), then
// combine (each thread its own rows). The caller separates the phases by a barrier.
//
// The shared experts as one item each over every row, not one per thread's rows (until session
// 27): each lane read every shared expert's weights for its own rows, ~0.59 MB a layer twice at
// v4-nano, 2.4 of the ~33 MB an 8-row step reads on two lanes; the step reads its weights at
// about the rate that one row's does, so the bytes are what it costs. Over its own rows a lane
// could run them between arriving at the routing barrier and waiting there; over every row it
// cannot, since they need the other lanes' normed rows.
//
// Bits: every product sums a row as it would alone (packed_matvec.h), the width blocks, the SwiGLU
// kernel's calls and the combine order are MoeLayer::forward's few-token path, so a row's output
// is bit for bit MoeLayer::forward's for it, whatever rows share its step and however the work
// is split (tests/model/moe_decode_test.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "trex/model/config.h"
#include "trex/model/moe.h"

namespace trex::model {

class PackedWeights;  // packed_weights.h

// One thread's working rows in the experts phase.
struct MoeDecodeScratch {
  std::vector<float> xs, g, u, h, hrows, y, w;
  std::vector<float> gu;           // [n, 2f] a routed expert's rows through [W1; W3]
  std::vector<int64_t> rows;       // routed (row, slot) pairs of one expert, as b K + k
  std::vector<int64_t> item_rows;  // [E] rows routed to each expert this step
  std::vector<int> order;          // [E] the routed experts, each lane's segment by rows, most first
};

class MoeDecode {
 public:
  explicit MoeDecode(const ModelConfig& config);

  // Sizes the shared arrays for the step's B rows, run by `lanes` lanes: one LaneWork segment
  // of the items per lane (items() below), whichever rows each lane routes (a lane may route
  // none). Call before the threads of a step start.
  void size_rows(int64_t B, int lanes = 1);

  // Rows [b0, b1) of x [B, d]: gate logits, choice of experts and their weights, as `layer`
  // routes (its selection bias, or its hash table by ids[b]).
  void route(const MoeParams& p, const MoeLayer& layer, const float* x, const int32_t* ids,
             int64_t b0, int64_t b1, PackedWeights* packed);

  // The experts phase as items for LaneWork(lanes, items()) (lane_work.h): items [0, shared)
  // are the shared experts, each over every row, then the routed experts in order, each over
  // every row routed to it; lane g's segment is LaneWork's [g items / lanes, (g + 1) items /
  // lanes). Every item needs every row routed and order_routed() on the scratch that runs it.
  int items() const { return shared_ + E_; }
  // After every row is routed: the routed experts of each lane's segment by rows, most first
  // (ties to the lower index), so that the items a lane steals last are the small ones. Each
  // thread that runs items calls it on its own scratch; they all compute the same order.
  void order_routed(MoeDecodeScratch& s) const;
  // Item i over x [B, d] (B as given to size_rows).
  void run_item(const MoeParams& p, const float* x, int i, MoeDecodeScratch& s,
                PackedWeights* packed);

  // out [b1 - b0, d] for rows [b0, b1), after every thread's experts phase: the shared experts'
  // outputs, then the routed ones in slot order.
  void combine(int64_t b0, int64_t b1, float* out) const;

 private:
  int64_t d_, f_, wb_, blocks_;
  int E_, K_, shared_;
  float gamma_, limit_;
  int64_t rows_ = 0;           // B of the step
  int lanes_ = 1;              // lanes of the step (LaneWork segments of the items)
  std::vector<float> logits_;  // [B, E]
  std::vector<int32_t> sel_;   // [B, K]
  std::vector<float> w_;       // [B, K]
  std::vector<float> ye_;      // [B K, d] routed expert output of (row b, slot k) at b K + k
  std::vector<float> ys_;      // [shared, B, d]
};

}  // namespace trex::model
