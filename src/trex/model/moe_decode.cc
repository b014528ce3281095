// MoeDecode: MoeLayer::forward's few-token path (moe.cc) cut into route / experts / combine
// phases, so the experts phase can split whole experts over the threads of a decoding step.
#include "trex/model/moe_decode.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "trex/core/trace.h"
#include "trex/kernels/swiglu.h"
#include "trex/model/moe_route.h"
#include "trex/model/packed_weights.h"
#include "trex/util/error.h"

namespace trex::model {

namespace {

template <class V>
void moe_decode_fit(V& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace

MoeDecode::MoeDecode(const ModelConfig& c)
    : d_(c.hidden),
      f_(c.ffn.expert_hidden),
      wb_(0),
      blocks_(expert_width_blocks(c.ffn.expert_hidden)),
      E_(c.ffn.routed_experts),
      K_(c.ffn.top_k),
      shared_(c.ffn.shared_experts),
      gamma_(float(c.ffn.routed_scaling_factor)),
      limit_(c.ffn.swiglu_limit > 0 ? float(c.ffn.swiglu_limit) : INFINITY) {
  wb_ = f_ / blocks_;
}

void MoeDecode::size_rows(int64_t B, int lanes) {
  rows_ = B;
  lanes_ = std::max(1, lanes);
  moe_decode_fit(logits_, size_t(B * E_));
  moe_decode_fit(sel_, size_t(B * K_));
  moe_decode_fit(w_, size_t(B * K_));
  moe_decode_fit(ye_, size_t(B * K_ * d_));
  moe_decode_fit(ys_, size_t(shared_ * B * d_));
}

void MoeDecode::route(const MoeParams& p, const MoeLayer& layer, const float* x,
                      const int32_t* ids, int64_t b0, int64_t b1, PackedWeights* packed) {
  TREX_TRACE(kMoeDispatch, "moe.decode.route");
  const int64_t n = b1 - b0, E = E_, K = K_;
  if (n <= 0) return;
  matvec_rows(packed, p.gate, x + b0 * d_, n, E, d_, &logits_[size_t(b0 * E)]);
  float sc[64];
  std::vector<float> sc_big;
  float* s = sc;
  if (E > 64) {
    sc_big.resize(size_t(E));
    s = sc_big.data();
  }
  const std::vector<float>& bias = layer.bias();
  const std::vector<int32_t>& table = layer.tid2eid();
  for (int64_t b = b0; b < b1; ++b) {
    const int32_t* hash_sel = nullptr;
    if (layer.hash()) {
      const int32_t id = ids[b];
      if (id < 0 || size_t(id) * size_t(K) >= table.size())
        throw InputError::field("moe", "token id " + std::to_string(id) + " outside the hash table");
      hash_sel = &table[size_t(id) * size_t(K)];
    }
    route_token(&logits_[size_t(b * E)], E, K, bias.data(), hash_sel, gamma_, s,
                &sel_[size_t(b * K)], &w_[size_t(b * K)]);
  }
}

void MoeDecode::order_routed(MoeDecodeScratch& s) const {
  const int64_t BK = rows_ * K_;
  s.item_rows.assign(size_t(E_), 0);
  for (int64_t i = 0; i < BK; ++i) ++s.item_rows[size_t(sel_[size_t(i)])];
  s.order.resize(size_t(E_));
  for (int e = 0; e < E_; ++e) s.order[size_t(e)] = e;
  // Segment g holds items [g n / lanes, (g + 1) n / lanes) of n = items() (LaneWork's split);
  // its routed experts are those items past the shared ones, less `shared_`.
  const int n = items();
  for (int g = 0; g < lanes_; ++g) {
    const int e0 = std::max(int(int64_t(g) * n / lanes_), shared_) - shared_;
    const int e1 = std::max(int(int64_t(g + 1) * n / lanes_), shared_) - shared_;
    std::stable_sort(s.order.begin() + e0, s.order.begin() + e1, [&](int a, int b) {
      return s.item_rows[size_t(a)] > s.item_rows[size_t(b)];
    });
  }
}

void MoeDecode::run_item(const MoeParams& p, const float* x, int i, MoeDecodeScratch& s,
                         PackedWeights* packed) {
  TREX_TRACE(kGemm, "moe.decode.experts");
  const int64_t d = d_, f = f_, K = K_, L = blocks_, wb = wb_, B = rows_;
  if (i < shared_) {
    // Shared expert i over every row, as MoeLayer::forward: W1, W3 over the whole width,
    // SwiGLU, W2 (each row's bits do not depend on the rows beside it).
    const int j = i;
    moe_decode_fit(s.g, size_t(B * f));
    moe_decode_fit(s.u, size_t(B * f));
    moe_decode_fit(s.h, size_t(B * f));
    matvec_rows(packed, p.shared_w1[size_t(j)], x, B, f, d, s.g.data());
    matvec_rows(packed, p.shared_w3[size_t(j)], x, B, f, d, s.u.data());
    kernels::swiglu_forward<float>(s.g.data(), s.u.data(), nullptr, s.h.data(), B, f, limit_);
    matvec_rows(packed, p.shared_w2[size_t(j)], s.h.data(), B, d, f, &ys_[size_t(j * rows_ * d)]);
    return;
  }
  // Routed expert e: its (row, slot) pairs in row order, as the dispatch's counting sort
  // orders them; W1, W3 per width block (block-major), SwiGLU per block with the routing
  // weights, then W2 over the whole width.
  const int e = s.order[size_t(i - shared_)];
  const int64_t n = s.item_rows[size_t(e)];
  if (n == 0) return;
  s.rows.clear();
  for (int64_t q = 0; q < B * K; ++q)
    if (sel_[size_t(q)] == e) s.rows.push_back(q);
  moe_decode_fit(s.xs, size_t(n * d));
  moe_decode_fit(s.w, size_t(n));
  moe_decode_fit(s.g, size_t(n * f));
  moe_decode_fit(s.u, size_t(n * f));
  moe_decode_fit(s.h, size_t(n * f));
  moe_decode_fit(s.hrows, size_t(n * f));
  moe_decode_fit(s.y, size_t(n * d));
  for (int64_t r = 0; r < n; ++r) {
    const int64_t q = s.rows[size_t(r)];
    std::memcpy(&s.xs[size_t(r * d)], x + (q / K) * d, sizeof(float) * size_t(d));
    s.w[size_t(r)] = w_[size_t(q)];
  }
  const int64_t nwb = n * wb;
  if (packed) {
    // W1 and W3 as one packed matrix [W1; W3] (2f outputs) in one product: each output is the
    // same chain over the input as in its own matrix's product, so g and u have the bits of the
    // per-block products below; one lookup instead of 2L, and 4-panel blocks over the 2f
    // outputs where the width blocks' products ran 3-panel ones at v4-nano (f / L = 48).
    const PackedMatrix& w13 = packed->get_stacked(p.w1[size_t(e)], p.w3[size_t(e)], f, d);
    moe_decode_fit(s.gu, size_t(n * 2 * f));
    packed_detail::panels_range(w13, s.xs.data(), n, s.gu.data(), 0, w13.panels());
    for (int64_t r = 0; r < n; ++r)  // rows [g | u] into the block-major g and u
      for (int64_t l = 0; l < L; ++l) {
        const float* gu = &s.gu[size_t(r * 2 * f + l * wb)];
        std::memcpy(&s.g[size_t(l * nwb + r * wb)], gu, sizeof(float) * size_t(wb));
        std::memcpy(&s.u[size_t(l * nwb + r * wb)], gu + f, sizeof(float) * size_t(wb));
      }
  } else {
    for (int64_t l = 0; l < L; ++l) {
      matvec_rows(packed, p.w1[size_t(e)] + l * wb * d, s.xs.data(), n, wb, d, &s.g[size_t(l * nwb)]);
      matvec_rows(packed, p.w3[size_t(e)] + l * wb * d, s.xs.data(), n, wb, d, &s.u[size_t(l * nwb)]);
    }
  }
  for (int64_t l = 0; l < L; ++l)
    kernels::swiglu_forward(&s.g[size_t(l * nwb)], &s.u[size_t(l * nwb)], s.w.data(),
                            &s.h[size_t(l * nwb)], n, wb, limit_);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t l = 0; l < L; ++l)
      std::memcpy(&s.hrows[size_t(r * f + l * wb)], &s.h[size_t(l * nwb + r * wb)],
                  sizeof(float) * size_t(wb));
  matvec_rows(packed, p.w2[size_t(e)], s.hrows.data(), n, d, f, s.y.data());
  for (int64_t r = 0; r < n; ++r)
    std::memcpy(&ye_[size_t(s.rows[size_t(r)] * d)], &s.y[size_t(r * d)], sizeof(float) * size_t(d));
}

void MoeDecode::combine(int64_t b0, int64_t b1, float* out) const {
  const int64_t d = d_, K = K_;
  for (int64_t b = b0; b < b1; ++b) {
    float* o = out + (b - b0) * d;
    if (shared_ == 0) std::memset(o, 0, sizeof(float) * size_t(d));
    for (int j = 0; j < shared_; ++j) {
      const float* y = &ys_[size_t((j * rows_ + b) * d)];
      if (j == 0)
        std::memcpy(o, y, sizeof(float) * size_t(d));
      else
        for (int64_t k = 0; k < d; ++k) o[k] += y[k];
    }
    for (int64_t k = 0; k < K; ++k) {
      const float* y = &ye_[size_t((b * K + k) * d)];
      for (int64_t c = 0; c < d; ++c) o[c] += y[c];
    }
  }
}

}  // namespace trex::model
