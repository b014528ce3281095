#include "trex/model/moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "trex/core/thread_pool.h"
#include "trex/core/trace.h"
#include "trex/kernels/gemm.h"
#include "trex/kernels/swiglu.h"
#include "trex/model/moe_route.h"
#include "trex/model/packed_weights.h"
#include "trex/model/side_by_side.h"
#include "trex/util/error.h"

namespace trex::model {

using kernels::GemmOptions;
using kernels::sgemm;
using kernels::Trans;

namespace {

// Calls fn(e, r0, n, gemm_options) for every expert e with n > 0 dispatched rows starting at row
// r0. With enough experts they run in parallel over the pool, each expert's GEMMs on one thread
// (inside a pool job a GEMM runs serially), the largest first so that the last to finish are
// short; otherwise one by one, each GEMM threaded. Why: threaded one by one, an expert's small
// GEMMs (v4-micro: 16 experts of ~256 rows, 512 x 256) spent much of their time in the pool's
// hand-offs (130-170 GFLOP/s, against 240-290 for the shared expert and the LM head). Bits: a
// GEMM's result does not depend on its thread count and every expert writes only its own rows
// and its own weight gradients, so both ways give the same results.
template <class Fn>
void for_each_expert(core::ThreadPool& pool, const std::vector<int64_t>& rows, const Fn& fn) {
  std::vector<int64_t> r0(rows.size()), order;
  int64_t r = 0;
  for (size_t e = 0; e < rows.size(); ++e) {
    r0[e] = r;
    r += rows[e];
    if (rows[e] > 0) order.push_back(int64_t(e));
  }
  GemmOptions go;
  go.pool = &pool;
  if (int64_t(order.size()) < 4 * int64_t(pool.num_threads())) {
    for (int64_t e : order) fn(e, r0[size_t(e)], rows[size_t(e)], go);
    return;
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return rows[size_t(a)] > rows[size_t(b)]; });
  core::TraceForward counts;  // the experts' FLOPs and bytes go to the caller's open span
  pool.parallel_for(0, int64_t(order.size()), 1, [&](int64_t lo, int64_t hi) {
    core::TraceForward::Scope scope(counts);
    for (int64_t i = lo; i < hi; ++i) {
      const int64_t e = order[size_t(i)];
      fn(e, r0[size_t(e)], rows[size_t(e)], go);
    }
  });
}

uint64_t splitmix64_next(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The pairwise bottom-up sum of `count` leaves over elements [begin, end): leaf 1 into leaf 0,
// 3 into 2, ..., then 2 into 0, 6 into 4, ...; the sum ends in leaf 0. For a power-of-two run
// of leaves [j n, (j + 1) n) the first log2(n) rounds are that run's own sum, so a peer holding
// those leaves can add them and the source finishes with the peers' sums (moe.h).
void add_pairwise(float* const* leaf, int64_t count, int64_t begin, int64_t end) {
  for (int64_t step = 1; step < count; step *= 2)
    for (int64_t i = 0; i + step < count; i += 2 * step) {
      float* a = leaf[i];
      const float* b = leaf[i + step];
      for (int64_t k = begin; k < end; ++k) a[k] += b[k];
    }
}

float sigmoid(float l) { return 1.f / (1.f + std::exp(-l)); }

}  // namespace

int expert_width_blocks(int64_t f) {
  for (int blocks : {4, 2})
    if (f % (16 * blocks) == 0 && f / blocks >= 32) return blocks;
  return 1;
}

std::vector<int32_t> build_tid2eid(int vocab, int experts, int top_k, uint64_t hash_seed) {
  if (top_k > experts) throw std::invalid_argument("build_tid2eid: top_k > experts");
  std::vector<int32_t> table(size_t(vocab) * top_k);
  for (int t = 0; t < vocab; ++t) {
    uint64_t state = (hash_seed << 32) ^ uint64_t(t);
    int32_t* row = &table[size_t(t) * top_k];
    for (int k = 0; k < top_k;) {
      int32_t e = int32_t(splitmix64_next(state) % uint64_t(experts));
      if (std::find(row, row + k, e) == row + k) row[k++] = e;
    }
  }
  return table;
}

struct MoeLayer::State {
  bool hash = false;
  int64_t d = 0, f = 0;
  int E = 0, K = 0, shared = 0, vocab = 0;
  float gamma = 1, limit = 0;
  std::vector<float> bias;       // [E]
  std::vector<int32_t> tid2eid;  // [V, K] (hash)

  // Saved by forward for backward (sized for the largest T seen, reused).
  int64_t T = 0;
  core::aligned_vector<float> x;          // [T, d]
  core::aligned_vector<float> logits;     // [T, E]
  core::aligned_vector<float> scores;     // [T, E] s
  std::vector<int32_t> sel;      // [T, K]
  std::vector<float> w;          // [T, K]
  std::vector<int64_t> slot;     // [T, K] -> row of the dispatched arrays
  std::vector<int64_t> rows;     // [E]
  std::vector<int64_t> load;     // [E] (= rows, as counts kept for the caller)
  std::vector<int64_t> slot_token;  // [T K] dispatched row -> token
  core::aligned_vector<float> wperm;      // [T K] routing weight of each dispatched row
  core::aligned_vector<float> xs;         // [T K, d] dispatched inputs
  core::aligned_vector<float> g, u, h;    // [T K, f]
  core::aligned_vector<float> gu;         // [rows of one expert, 2 f] through a packed [W1; W3]
  core::aligned_vector<float> sg, su, sh; // [shared, T, f]
  MoeScratch own;                // scratch when the caller passes none

  // Expert parallelism (ex != nullptr with ranks() > 1). The expert side (xs, wperm, g, u, h
  // and the GEMMs) then holds the rows received from every peer, grouped by local expert.
  // Expert-tensor parallelism (S = ex->shards() > 1): this peer holds the slice
  // [foff, foff + fs) of each local expert's width, every dispatched row goes to the S peers of
  // its expert's block, and their partial outputs (and partial input and routing-weight
  // gradients) come back to the source, which adds them in shard order 0, 1, ..., S - 1.
  ExpertExchange* ex = nullptr;
  int e0 = 0, El = 0;                 // first local expert, local experts
  int S = 1;                          // shards per expert (ETP)
  int64_t fs = 0, foff = 0;           // this peer's width slice of every local expert
  int64_t L = 1, wb = 0;              // width blocks in the slice, and their width (fs = L wb)
  std::vector<int64_t> block_row0, block_rows;  // [ranks / S] dispatch rows of each expert block
  core::aligned_vector<float> partbuf;        // [S T K, width] partial results back from the S shards
  std::vector<int64_t> erows;        // [El] rows per local expert on the expert side
  std::vector<int64_t> recv_cnt;     // [peers, El] rows from each source for each local expert
  std::vector<int64_t> send_rows, recv_rows;  // [peers]
  std::vector<int64_t> perm;         // expert-side row -> row of the received (source-major) buffer
  core::aligned_vector<float> sendbuf, recvbuf;  // packed rows in flight
  core::aligned_vector<float> src_grads;      // [peers, El, 3 fs d]

  // Where copy j of dispatched row r sits in the rows sent to the owners: peer b S + j gets
  // the rows of expert block b, so block b's rows appear S times in a row (S = 1: dispatch order).
  int64_t sent_row(int64_t r, int64_t j) const {
    if (S == 1) return r;
    const size_t b = size_t(std::upper_bound(block_row0.begin(), block_row0.end(), r) - block_row0.begin() - 1);
    return S * block_row0[b] + j * block_rows[b] + (r - block_row0[b]);
  }

  template <class V>
  static void fit(V& v, size_t n) {
    if (v.size() < n) {
      v.reserve(n);  // capacity n, not libstdc++'s doubling: the huge page at n's end faults in whole
      v.resize(n);
    }
  }
};

MoeLayer::MoeLayer(const ModelConfig& c, bool hash) : s_(std::make_unique<State>()) {
  State& s = *s_;
  s.hash = hash;
  s.d = c.hidden;
  s.f = c.ffn.expert_hidden;
  s.E = c.ffn.routed_experts;
  s.K = c.ffn.top_k;
  s.shared = c.ffn.shared_experts;
  s.vocab = c.vocab;
  s.gamma = float(c.ffn.routed_scaling_factor);
  s.limit = c.ffn.swiglu_limit > 0 ? float(c.ffn.swiglu_limit) : INFINITY;
  if (s.E < 1 || s.K < 1 || s.K > s.E || s.f < 1)
    throw InputError::field(c.name + ": ffn", "an MoE layer needs 1 <= top_k <= routed_experts and expert_hidden >= 1");
  if (c.ffn.score_function != "sqrtsoftplus")
    throw InputError::field(c.name + ": ffn.score_function",
                            "'" + c.ffn.score_function + "' not supported by the V4 MoE layer (sqrtsoftplus)");
  s.bias.assign(size_t(s.E), 0.f);
  if (hash) s.tid2eid = build_tid2eid(c.vocab, s.E, s.K, uint64_t(c.ffn.hash_seed));
  s.rows.assign(size_t(s.E), 0);
  s.load.assign(size_t(s.E), 0);
  s.El = s.E;
  s.fs = s.f;
  s.L = expert_width_blocks(s.f);
  s.wb = s.f / s.L;
}

MoeLayer::~MoeLayer() = default;
MoeLayer::MoeLayer(MoeLayer&&) noexcept = default;
MoeLayer& MoeLayer::operator=(MoeLayer&&) noexcept = default;

bool MoeLayer::hash() const { return s_->hash; }
int MoeLayer::experts() const { return s_->E; }
int MoeLayer::top_k() const { return s_->K; }
const std::vector<int32_t>& MoeLayer::selected() const { return s_->sel; }
const std::vector<float>& MoeLayer::weights() const { return s_->w; }
const std::vector<int64_t>& MoeLayer::load() const { return s_->load; }
std::vector<float>& MoeLayer::bias() { return s_->bias; }
const std::vector<float>& MoeLayer::bias() const { return s_->bias; }
std::vector<int32_t>& MoeLayer::tid2eid() { return s_->tid2eid; }
const std::vector<int32_t>& MoeLayer::tid2eid() const { return s_->tid2eid; }

void MoeLayer::set_exchange(ExpertExchange* ex) {
  State& s = *s_;
  if (ex != nullptr && ex->ranks() > 1) {
    const int P = ex->ranks(), S = ex->shards();
    if (S < 1 || P % S != 0 || s.E % (P / S) != 0 || s.f % S != 0)
      throw std::invalid_argument("MoeLayer::set_exchange: experts or expert width not divisible by the group");
    s.ex = ex;
    s.S = S;
    s.El = s.E / (P / S);
    s.e0 = (ex->rank() / S) * s.El;
    s.fs = s.f / S;
    s.foff = (ex->rank() % S) * s.fs;
    // The peer's run of width blocks, a subtree of the pairwise sum when S divides the blocks;
    // otherwise its slice is one block (equal to one process up to rounding).
    const int C = expert_width_blocks(s.f);
    s.L = C % S == 0 ? C / S : 1;
    s.wb = s.fs / s.L;
    s.src_grads.assign(size_t(P) * size_t(s.El) * 3 * size_t(s.fs * s.d), 0.f);
  } else {
    s.ex = nullptr;
    s.S = 1;
    s.El = s.E;
    s.e0 = 0;
    s.fs = s.f;
    s.foff = 0;
    s.L = expert_width_blocks(s.f);
    s.wb = s.f / s.L;
    s.src_grads.clear();
  }
}
int MoeLayer::first_local_expert() const { return s_->e0; }
int MoeLayer::local_experts() const { return s_->El; }
std::span<const float> MoeLayer::source_grads() const { return s_->src_grads; }
void MoeLayer::zero_source_grads() { std::fill(s_->src_grads.begin(), s_->src_grads.end(), 0.f); }

void MoeLayer::update_bias(float rate) { update_bias(rate, s_->load); }

void MoeLayer::update_bias(float rate, std::span<const int64_t> load) {
  State& s = *s_;
  if (s.hash) return;
  if (int64_t(load.size()) != s.E) throw std::invalid_argument("MoeLayer::update_bias: load size != experts");
  double total = 0;
  for (int64_t c : load) total += double(c);
  double mean = total / s.E;
  for (int e = 0; e < s.E; ++e) {
    double diff = mean - double(load[size_t(e)]);
    s.bias[size_t(e)] += rate * float((diff > 0) - (diff < 0));
  }
}

namespace {

// Sums of consecutive blocks of `per` counts: out[p] = sum of counts[p per .. (p + 1) per).
std::vector<int64_t> block_sums(const std::vector<int64_t>& counts, int64_t per) {
  std::vector<int64_t> out(counts.size() / size_t(per), 0);
  for (size_t i = 0; i < counts.size(); ++i) out[i / size_t(per)] += counts[i];
  return out;
}

}  // namespace

void MoeLayer::forward(const MoeParams& p, const float* x, const int32_t* ids, int64_t T, float* out,
                       MoeScratch* scratch, PackedWeights* packed) {
  State& s = *s_;
  MoeScratch& w = scratch ? *scratch : s.own;
  const int64_t d = s.d, f = s.f, E = s.E, K = s.K, TK = T * K;
  core::ThreadPool& pool = core::default_thread_pool();
  const bool ep = s.ex != nullptr;
  s.T = T;
  State::fit(s.x, size_t(T * d));
  State::fit(s.logits, size_t(T * E));
  State::fit(s.scores, size_t(T * E));
  s.sel.resize(size_t(TK));
  s.w.resize(size_t(TK));
  State::fit(s.slot, size_t(TK));
  State::fit(s.slot_token, size_t(TK));
  State::fit(s.wperm, size_t(TK));
  State::fit(s.xs, size_t(TK * d));
  State::fit(w.ye, size_t(TK * d));
  State::fit(s.sg, size_t(s.shared * T * f));
  State::fit(s.su, size_t(s.shared * T * f));
  State::fit(s.sh, size_t(s.shared * T * f));
  if (T == 0 && !ep) return;
  if (T > 0) std::memcpy(s.x.data(), x, sizeof(float) * size_t(T * d));

  // A few tokens (decoding, one per sequence of a batch): each weight is read once for all of
  // them by matrix-vector products; a GEMM with a few rows would pack every weight into panels
  // first, which costs more than the product. The products sum each row as it would alone.
  const bool few = T >= 1 && T <= (packed ? kPackedFewTokens : kFewTokens) && !ep;
  {
    TREX_TRACE(kGemm, "moe.gate");
    if (few)
      matvec_rows(packed, p.gate, x, T, E, d, s.logits.data());
    else if (T > 0)
      sgemm(Trans::kNo, Trans::kYes, T, E, d, 1.f, x, d, p.gate, d, 0.f, s.logits.data(), E);
  }
  {
    TREX_TRACE(kMoeDispatch, "moe.route");
    // Token ids first, on the caller in token order: the first bad one is the one reported, as
    // the parallel loop below could meet them in any order.
    if (s.hash)
      for (int64_t t = 0; t < T; ++t)
        if (ids[t] < 0 || ids[t] >= s.vocab)
          throw InputError::field("moe", "token id " + std::to_string(ids[t]) + " outside [0, " +
                                             std::to_string(s.vocab) + ")");
    // Each token's scores, selection and weights depend on that token alone: blocks of tokens
    // over the pool (v4-micro, 2048 tokens: ~1 ms a layer on one thread). run_dynamic() below
    // lets the caller do every block when the worker is late, so a slow wake-up costs nothing.
    pool.parallel_for(0, T, 128, [&](int64_t t_lo, int64_t t_hi) {
      for (int64_t t = t_lo; t < t_hi; ++t)
        route_token(&s.logits[size_t(t * E)], E, K, s.bias.data(),
                    s.hash ? &s.tid2eid[size_t(ids[t]) * size_t(K)] : nullptr, s.gamma,
                    &s.scores[size_t(t * E)], &s.sel[size_t(t * K)], &s.w[size_t(t * K)]);
    });
    // Counting sort of the T K (token, slot) pairs by expert, token order inside an expert.
    std::fill(s.rows.begin(), s.rows.end(), 0);
    for (int64_t i = 0; i < TK; ++i) s.rows[size_t(s.sel[size_t(i)])]++;
    std::vector<int64_t> next(size_t(E), 0);
    for (int64_t e = 1; e < E; ++e) next[size_t(e)] = next[size_t(e - 1)] + s.rows[size_t(e - 1)];
    for (int64_t i = 0; i < TK; ++i) {
      int64_t r = next[size_t(s.sel[size_t(i)])]++;
      s.slot[size_t(i)] = r;
      s.slot_token[size_t(r)] = i / K;
      s.wperm[size_t(r)] = s.w[size_t(i)];
    }
    s.load = s.rows;
    if (ep) {
      const int64_t B = s.ex->ranks() / s.S;
      s.block_row0.assign(size_t(B), 0);
      s.block_rows.assign(size_t(B), 0);
      for (int64_t e = 0; e < E; ++e) s.block_rows[size_t(e / s.El)] += s.rows[size_t(e)];
      for (int64_t b = 1; b < B; ++b) s.block_row0[size_t(b)] = s.block_row0[size_t(b - 1)] + s.block_rows[size_t(b - 1)];
      // Each dispatched row travels with its routing weight: [x | w], d + 1 floats, once to each
      // shard of its expert.
      State::fit(s.sendbuf, size_t(s.S * TK * (d + 1)));
      pool.parallel_for(0, TK, 64, [&](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r)
          for (int64_t j = 0; j < s.S; ++j) {
            float* row = &s.sendbuf[size_t(s.sent_row(r, j) * (d + 1))];
            std::memcpy(row, x + s.slot_token[size_t(r)] * d, sizeof(float) * size_t(d));
            row[d] = s.wperm[size_t(r)];
          }
      });
    } else {
      pool.parallel_for(0, TK, 64, [&](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r)
          std::memcpy(&s.xs[size_t(r * d)], x + s.slot_token[size_t(r)] * d, sizeof(float) * size_t(d));
      });
      s.erows = s.rows;
    }
  }
  // Between the shared expert's products: the exchange in flight moves along (expert_exchange.h).
  auto progress = [&] {
    if (s.ex) s.ex->progress_rows();
  };
  // Shared experts write out first; the routed outputs are added on top.
  auto shared_forward = [&] {
    for (int j = 0; j < s.shared && T > 0; ++j) {
      float* sg = &s.sg[size_t(j * T * f)];
      float* su = &s.su[size_t(j * T * f)];
      float* sh = &s.sh[size_t(j * T * f)];
      {
        TREX_TRACE(kGemm, "moe.shared.w1w3");
        if (few) {
          matvec_rows(packed, p.shared_w1[size_t(j)], x, T, f, d, sg);
          matvec_rows(packed, p.shared_w3[size_t(j)], x, T, f, d, su);
        } else if (!s.ex) {
          side_by_side({[&] { sgemm(Trans::kNo, Trans::kYes, T, f, d, 1.f, x, d, p.shared_w1[size_t(j)], d, 0.f, sg, f); },
                        [&] { sgemm(Trans::kNo, Trans::kYes, T, f, d, 1.f, x, d, p.shared_w3[size_t(j)], d, 0.f, su, f); }});
        } else {
          sgemm(Trans::kNo, Trans::kYes, T, f, d, 1.f, x, d, p.shared_w1[size_t(j)], d, 0.f, sg, f);
          sgemm(Trans::kNo, Trans::kYes, T, f, d, 1.f, x, d, p.shared_w3[size_t(j)], d, 0.f, su, f);
        }
      }
      progress();
      {
        TREX_TRACE(kElementwise, "moe.shared.swiglu");
        kernels::swiglu_forward<float>(sg, su, nullptr, sh, T, f, s.limit);
      }
      progress();
      TREX_TRACE(kGemm, "moe.shared.w2");
      if (few && j == 0) {
        matvec_rows(packed, p.shared_w2[size_t(j)], sh, T, d, f, out);
      } else if (few) {
        std::vector<float> tmp(static_cast<size_t>(T * d));
        matvec_rows(packed, p.shared_w2[size_t(j)], sh, T, d, f, tmp.data());
        for (int64_t i = 0; i < T * d; ++i) out[i] += tmp[size_t(i)];
      } else {
        sgemm(Trans::kNo, Trans::kYes, T, d, f, 1.f, sh, f, p.shared_w2[size_t(j)], f, j ? 1.f : 0.f, out, d);
      }
    }
  };
  int64_t R = TK;  // rows on the expert side
  if (ep) {
    TREX_TRACE(kMoeDispatch, "moe.dispatch.exchange");
    const int P = s.ex->ranks();
    const int64_t El = s.El;
    // Peer p gets the counts of its expert block p / S.
    std::vector<int64_t> send_cnt(size_t(P * El));
    for (int64_t q = 0; q < P * El; ++q) send_cnt[size_t(q)] = s.rows[size_t((q / El / s.S) * El + q % El)];
    s.recv_cnt.assign(size_t(P * El), 0);
    s.ex->exchange_counts(send_cnt.data(), s.recv_cnt.data(), int(El), d + 1);
    s.send_rows = block_sums(send_cnt, El);
    s.recv_rows = block_sums(s.recv_cnt, El);
    R = 0;
    for (int64_t n : s.recv_rows) R += n;
    State::fit(s.recvbuf, size_t(R * (d + 1)));
    s.ex->start_rows(s.sendbuf.data(), s.send_rows.data(), s.recvbuf.data(), s.recv_rows.data(), d + 1);
    shared_forward();  // overlaps the transfer
    s.ex->finish_rows();
    // Regroup the source-major rows by local expert (sources in peer order inside an expert).
    s.erows.assign(size_t(El), 0);
    for (int src = 0; src < P; ++src)
      for (int64_t j = 0; j < El; ++j) s.erows[size_t(j)] += s.recv_cnt[size_t(src * El + j)];
    s.perm.resize(size_t(R));
    std::vector<int64_t> next(size_t(El), 0);
    for (int64_t j = 1; j < El; ++j) next[size_t(j)] = next[size_t(j - 1)] + s.erows[size_t(j - 1)];
    int64_t src_row = 0;
    for (int src = 0; src < P; ++src)
      for (int64_t j = 0; j < El; ++j)
        for (int64_t i = 0; i < s.recv_cnt[size_t(src * El + j)]; ++i) s.perm[size_t(next[size_t(j)]++)] = src_row++;
    State::fit(s.xs, size_t(R * d));
    State::fit(s.wperm, size_t(R));
    for (int64_t r = 0; r < R; ++r) {
      const float* row = &s.recvbuf[size_t(s.perm[size_t(r)] * (d + 1))];
      std::memcpy(&s.xs[size_t(r * d)], row, sizeof(float) * size_t(d));
      s.wperm[size_t(r)] = row[d];
    }
  }
  const int64_t fs = s.fs, foff = s.foff, L = s.L, wb = s.wb, Rwb = R * wb;
  // g, u, h block-major: block l of row r at [l R wb + r wb].
  State::fit(s.g, size_t(R * fs));
  State::fit(s.u, size_t(R * fs));
  State::fit(s.h, size_t(R * fs));
  // Expert outputs: straight into w.ye (dispatch order) here, or into yr to be sent back; the
  // width blocks after the first leave their partial outputs in w.leaves.
  State::fit(w.ye, size_t(R * d));
  State::fit(w.leaves, size_t((L - 1) * R * d));
  float* ye = w.ye.data();
  std::vector<float> yr;
  if (ep) {
    yr.resize(size_t(R * d));
    ye = yr.data();
  }
  std::vector<float*> leaf(static_cast<size_t>(L));
  leaf[0] = ye;
  for (int64_t l = 1; l < L; ++l) leaf[size_t(l)] = &w.leaves[size_t((l - 1) * R * d)];
  const int e0 = s.e0;
  {
    TREX_TRACE(kGemm, "moe.experts.w1w3");
    if (few) {
      // Each expert's rows [r0, r0 + n) are contiguous in dispatch order.
      for (int64_t e = 0, r0 = 0; e < int64_t(s.erows.size()); r0 += s.erows[size_t(e)], ++e) {
        const int64_t n = s.erows[size_t(e)];
        if (n == 0) continue;
        if (packed) {
          // On a decoder's copies, [W1; W3] as one packed matrix (2f outputs), as MoeDecode's
          // experts read them: one copy of each expert's W1 and W3 for one-row and batched steps
          // alike (per width block, a server that ran both held two, PackedWeights::bytes()).
          // Each output is the same chain over the input as in its own block's product, so g
          // and u have the per-block products' bits.
          const PackedMatrix& w13 = packed->get_stacked(p.w1[size_t(e0 + e)], p.w3[size_t(e0 + e)], f, d);
          State::fit(s.gu, size_t(n * 2 * f));
          packed_detail::panels_range(w13, &s.xs[size_t(r0 * d)], n, s.gu.data(), 0, w13.panels());
          for (int64_t r = 0; r < n; ++r)  // rows [g | u] into the block-major g and u
            for (int64_t l = 0; l < L; ++l) {
              const float* gu = &s.gu[size_t(r * 2 * f + l * wb)];
              std::memcpy(&s.g[size_t(l * Rwb + (r0 + r) * wb)], gu, sizeof(float) * size_t(wb));
              std::memcpy(&s.u[size_t(l * Rwb + (r0 + r) * wb)], gu + f, sizeof(float) * size_t(wb));
            }
          continue;
        }
        for (int64_t l = 0; l < L; ++l) {
          matvec_rows(packed, p.w1[size_t(e0 + e)] + l * wb * d, &s.xs[size_t(r0 * d)], n, wb, d, &s.g[size_t(l * Rwb + r0 * wb)]);
          matvec_rows(packed, p.w3[size_t(e0 + e)] + l * wb * d, &s.xs[size_t(r0 * d)], n, wb, d, &s.u[size_t(l * Rwb + r0 * wb)]);
        }
      }
    } else {
      for_each_expert(pool, s.erows, [&](int64_t e, int64_t r0, int64_t n, const GemmOptions& go) {
        const float* xe = &s.xs[size_t(r0 * d)];
        for (int64_t l = 0; l < L; ++l) {
          const int64_t row = foff + l * wb;  // of W1 and W3
          sgemm(Trans::kNo, Trans::kYes, n, wb, d, 1.f, xe, d, p.w1[size_t(e0 + e)] + row * d, d, 0.f,
                &s.g[size_t(l * Rwb + r0 * wb)], wb, go);
          sgemm(Trans::kNo, Trans::kYes, n, wb, d, 1.f, xe, d, p.w3[size_t(e0 + e)] + row * d, d, 0.f,
                &s.u[size_t(l * Rwb + r0 * wb)], wb, go);
        }
      });
    }
  }
  {
    TREX_TRACE(kElementwise, "moe.swiglu");
    for (int64_t l = 0; l < L; ++l)
      kernels::swiglu_forward(&s.g[size_t(l * Rwb)], &s.u[size_t(l * Rwb)], s.wperm.data(), &s.h[size_t(l * Rwb)], R,
                              wb, s.limit);
  }
  {
    TREX_TRACE(kGemm, "moe.experts.w2");
    if (few) {
      // One product over the whole width per row (decoding's own bits, as before the blocks).
      std::vector<float> hrows(size_t(R * f));
      for (int64_t r = 0; r < R; ++r)
        for (int64_t l = 0; l < L; ++l)
          std::memcpy(&hrows[size_t(r * f + l * wb)], &s.h[size_t(l * Rwb + r * wb)], sizeof(float) * size_t(wb));
      for (int64_t e = 0, r0 = 0; e < int64_t(s.erows.size()); r0 += s.erows[size_t(e)], ++e) {
        const int64_t n = s.erows[size_t(e)];
        if (n > 0) matvec_rows(packed, p.w2[size_t(e0 + e)], &hrows[size_t(r0 * f)], n, d, f, &ye[size_t(r0 * d)]);
      }
    } else {
      for_each_expert(pool, s.erows, [&](int64_t e, int64_t r0, int64_t n, const GemmOptions& go) {
        for (int64_t l = 0; l < L; ++l)
          sgemm(Trans::kNo, Trans::kYes, n, d, wb, 1.f, &s.h[size_t(l * Rwb + r0 * wb)], wb,
                p.w2[size_t(e0 + e)] + foff + l * wb, f, 0.f, &leaf[size_t(l)][size_t(r0 * d)], d, go);
        add_pairwise(leaf.data(), L, r0 * d, (r0 + n) * d);
      });
    }
  }
  if (ep) {
    TREX_TRACE(kMoeDispatch, "moe.combine.exchange");
    // Packed straight where the peers read them when the transport allows (one copy).
    float* packed = s.ex->send_slot(s.recv_rows.data(), d);
    if (!packed) {
      State::fit(s.recvbuf, size_t(R * d));
      packed = s.recvbuf.data();
    }
    for (int64_t r = 0; r < R; ++r)
      std::memcpy(&packed[size_t(s.perm[size_t(r)] * d)], &yr[size_t(r * d)], sizeof(float) * size_t(d));
    State::fit(w.ye, size_t(TK * d));
    if (s.S > 1) State::fit(s.partbuf, size_t(s.S * TK * d));
    float* back = s.S > 1 ? s.partbuf.data() : w.ye.data();
    s.ex->start_rows(packed, s.recv_rows.data(), back, s.send_rows.data(), d);
    s.ex->finish_rows();
    if (s.S > 1) {
      // Row-parallel W2: the output is the sum of the shards' partial outputs, added pairwise
      // in shard order: the upper rounds of the width blocks' sum (moe.h).
      pool.parallel_for(0, TK, 64, [&](int64_t lo, int64_t hi) {
        std::vector<float*> part(static_cast<size_t>(s.S));
        for (int64_t r = lo; r < hi; ++r) {
          for (int64_t j = 0; j < s.S; ++j) part[size_t(j)] = &back[size_t(s.sent_row(r, j) * d)];
          add_pairwise(part.data(), s.S, 0, d);
          std::memcpy(&w.ye[size_t(r * d)], part[0], sizeof(float) * size_t(d));
        }
      });
    }
  } else {
    shared_forward();
  }
  if (T == 0) return;
  TREX_TRACE(kMoeDispatch, "moe.combine");
  bool first = s.shared == 0;
  pool.parallel_for(0, T, 16, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      float* o = out + t * d;
      if (first) std::memset(o, 0, sizeof(float) * size_t(d));
      for (int64_t k = 0; k < K; ++k) {
        const float* y = &w.ye[size_t(s.slot[size_t(t * K + k)] * d)];
        for (int64_t i = 0; i < d; ++i) o[i] += y[i];
      }
    }
  });
}

void MoeLayer::backward(const MoeParams& p, const float* dout, float* dx, const MoeGrads& g,
                        MoeScratch* scratch) {
  State& s = *s_;
  MoeScratch& w = scratch ? *scratch : s.own;
  const int64_t T = s.T, d = s.d, f = s.f, E = s.E, K = s.K, TK = T * K;
  core::ThreadPool& pool = core::default_thread_pool();
  const bool ep = s.ex != nullptr;
  int64_t R = TK;
  if (ep) {
    R = 0;
    for (int64_t n : s.recv_rows) R += n;
  }
  State::fit(w.dye, size_t(std::max(TK, R) * d));
  const int64_t fs = s.fs, foff = s.foff, L = s.L, wb = s.wb, Rwb = R * wb;
  State::fit(w.dh, size_t(R * fs));
  State::fit(w.dg, size_t(R * fs));
  State::fit(w.du, size_t(R * fs));
  State::fit(w.dw, size_t(std::max(TK, R)));
  State::fit(w.dxs, size_t(std::max(TK, R) * d));
  State::fit(w.leaves, size_t((L - 1) * R * d));
  State::fit(w.dw_leaves, size_t((L - 1) * R));
  State::fit(w.dl, size_t(T * E));
  State::fit(w.sdh, size_t(T * f));
  State::fit(w.sdg, size_t(T * f));
  State::fit(w.sdu, size_t(T * f));
  if (T == 0 && !ep) return;
  const float* x = s.x.data();

  auto progress = [&] {  // between the shared expert's products (as in the forward)
    if (s.ex) s.ex->progress_rows();
  };
  // Shared experts: dx starts as their input gradient.
  auto shared_backward = [&] {
    if (T == 0) return;
    if (s.shared == 0) std::memset(dx, 0, sizeof(float) * size_t(T * d));
    for (int j = 0; j < s.shared; ++j) {
      const float* sg = &s.sg[size_t(j * T * f)];
      const float* su = &s.su[size_t(j * T * f)];
      const float* sh = &s.sh[size_t(j * T * f)];
      TREX_TRACE(kGemm, "moe.shared.bwd");
      if (!s.ex) {
        // No exchange to drive between the products (progress() is a no-op): the independent
        // ones side by side (side_by_side.h), the same products and bits as below.
        side_by_side({[&] { sgemm(Trans::kNo, Trans::kNo, T, f, d, 1.f, dout, d, p.shared_w2[size_t(j)], f, 0.f, w.sdh.data(), f); },
                      [&] { sgemm(Trans::kYes, Trans::kNo, d, f, T, 1.f, dout, d, sh, f, 1.f, g.shared_w2[size_t(j)], f); }});
        kernels::swiglu_backward<float>(sg, su, nullptr, w.sdh.data(), w.sdg.data(), w.sdu.data(), nullptr, T, f,
                                        s.limit);
        side_by_side({[&] {
                        sgemm(Trans::kNo, Trans::kNo, T, d, f, 1.f, w.sdg.data(), f, p.shared_w1[size_t(j)], d,
                              j ? 1.f : 0.f, dx, d);
                        sgemm(Trans::kNo, Trans::kNo, T, d, f, 1.f, w.sdu.data(), f, p.shared_w3[size_t(j)], d, 1.f,
                              dx, d);
                      },
                      [&] { sgemm(Trans::kYes, Trans::kNo, f, d, T, 1.f, w.sdg.data(), f, x, d, 1.f, g.shared_w1[size_t(j)], d); },
                      [&] { sgemm(Trans::kYes, Trans::kNo, f, d, T, 1.f, w.sdu.data(), f, x, d, 1.f, g.shared_w3[size_t(j)], d); }});
        continue;
      }
      sgemm(Trans::kNo, Trans::kNo, T, f, d, 1.f, dout, d, p.shared_w2[size_t(j)], f, 0.f, w.sdh.data(), f);
      progress();
      sgemm(Trans::kYes, Trans::kNo, d, f, T, 1.f, dout, d, sh, f, 1.f, g.shared_w2[size_t(j)], f);
      progress();
      kernels::swiglu_backward<float>(sg, su, nullptr, w.sdh.data(), w.sdg.data(), w.sdu.data(), nullptr, T, f,
                                      s.limit);
      sgemm(Trans::kYes, Trans::kNo, f, d, T, 1.f, w.sdg.data(), f, x, d, 1.f, g.shared_w1[size_t(j)], d);
      progress();
      sgemm(Trans::kYes, Trans::kNo, f, d, T, 1.f, w.sdu.data(), f, x, d, 1.f, g.shared_w3[size_t(j)], d);
      progress();
      sgemm(Trans::kNo, Trans::kNo, T, d, f, 1.f, w.sdg.data(), f, p.shared_w1[size_t(j)], d, j ? 1.f : 0.f, dx, d);
      progress();
      sgemm(Trans::kNo, Trans::kNo, T, d, f, 1.f, w.sdu.data(), f, p.shared_w3[size_t(j)], d, 1.f, dx, d);
    }
  };

  // ep: staged in the order sent to the owners (each row once per shard of its expert), packed
  // straight where the peers read them when the transport allows (one copy).
  float* dst = ep ? s.ex->send_slot(s.send_rows.data(), d) : w.dye.data();
  {
    TREX_TRACE(kMoeDispatch, "moe.dispatch_grad");
    if (!dst) {
      State::fit(s.sendbuf, size_t(s.S * TK * d));
      dst = s.sendbuf.data();
    }
    const int64_t copies = ep ? s.S : 1;
    pool.parallel_for(0, TK, 64, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r)
        for (int64_t j = 0; j < copies; ++j)
          std::memcpy(&dst[size_t(s.sent_row(r, j) * d)], dout + s.slot_token[size_t(r)] * d, sizeof(float) * size_t(d));
    });
  }
  if (ep) {
    TREX_TRACE(kMoeDispatch, "moe.dispatch_grad.exchange");
    State::fit(s.recvbuf, size_t(R * d));
    s.ex->start_rows(dst, s.send_rows.data(), s.recvbuf.data(), s.recv_rows.data(), d);
    shared_backward();  // overlaps the transfer
    s.ex->finish_rows();
    for (int64_t r = 0; r < R; ++r)
      std::memcpy(&w.dye[size_t(r * d)], &s.recvbuf[size_t(s.perm[size_t(r)] * d)], sizeof(float) * size_t(d));
  }

  // The weight gradients of local expert e from its rows [r0, r0 + n): one block here; with an
  // exchange, one block per source peer, each into that source's gradient.
  const int e0 = s.e0;
  const int64_t El = s.El, fd = fs * d;
  auto for_each_source = [&](int64_t e, int64_t r0, const auto& fn) {
    if (!ep) {
      fn(r0, s.erows[size_t(e)], g.w1[size_t(e)], g.w2[size_t(e)], g.w3[size_t(e)]);
      return;
    }
    for (int src = 0; src < s.ex->ranks(); ++src) {
      int64_t nb = s.recv_cnt[size_t(src * El + e)];
      float* base = &s.src_grads[size_t((src * El + e) * 3 * fd)];
      if (nb > 0) fn(r0, nb, base, base + fd, base + 2 * fd);
      r0 += nb;
    }
  };
  // Block l of the width: dh, dg, du block-major as g, u, h; its partial input gradient in
  // dx_leaf[l] (w.dxs for the first) and partial routing-weight gradient in dw_leaf[l].
  std::vector<float*> dx_leaf(static_cast<size_t>(L)), dw_leaf(static_cast<size_t>(L));
  dx_leaf[0] = w.dxs.data();
  dw_leaf[0] = w.dw.data();
  for (int64_t l = 1; l < L; ++l) {
    dx_leaf[size_t(l)] = &w.leaves[size_t((l - 1) * R * d)];
    dw_leaf[size_t(l)] = &w.dw_leaves[size_t((l - 1) * R)];
  }
  {
    TREX_TRACE(kGemm, "moe.experts.w2.bwd");
    for_each_expert(pool, s.erows, [&](int64_t e, int64_t r0, int64_t n, const GemmOptions& go) {
      const float* dye = &w.dye[size_t(r0 * d)];
      for (int64_t l = 0; l < L; ++l) {
        sgemm(Trans::kNo, Trans::kNo, n, wb, d, 1.f, dye, d, p.w2[size_t(e0 + e)] + foff + l * wb, f, 0.f,
              &w.dh[size_t(l * Rwb + r0 * wb)], wb, go);
        for_each_source(e, r0, [&](int64_t b0, int64_t nb, float*, float* gw2, float*) {
          sgemm(Trans::kYes, Trans::kNo, d, wb, nb, 1.f, &w.dye[size_t(b0 * d)], d, &s.h[size_t(l * Rwb + b0 * wb)], wb,
                1.f, gw2 + l * wb, fs, go);
        });
      }
    });
  }
  {
    TREX_TRACE(kElementwise, "moe.swiglu.bwd");
    for (int64_t l = 0; l < L; ++l)
      kernels::swiglu_backward(&s.g[size_t(l * Rwb)], &s.u[size_t(l * Rwb)], s.wperm.data(), &w.dh[size_t(l * Rwb)],
                               &w.dg[size_t(l * Rwb)], &w.du[size_t(l * Rwb)], dw_leaf[size_t(l)], R, wb, s.limit);
  }
  {
    TREX_TRACE(kGemm, "moe.experts.w1w3.bwd");
    for_each_expert(pool, s.erows, [&](int64_t e, int64_t r0, int64_t n, const GemmOptions& go) {
      for (int64_t l = 0; l < L; ++l) {
        const float* dg = &w.dg[size_t(l * Rwb)];
        const float* du = &w.du[size_t(l * Rwb)];
        const int64_t row = foff + l * wb;  // of W1 and W3
        for_each_source(e, r0, [&](int64_t b0, int64_t nb, float* gw1, float*, float* gw3) {
          const float* xe = &s.xs[size_t(b0 * d)];
          sgemm(Trans::kYes, Trans::kNo, wb, d, nb, 1.f, dg + b0 * wb, wb, xe, d, 1.f, gw1 + l * wb * d, d, go);
          sgemm(Trans::kYes, Trans::kNo, wb, d, nb, 1.f, du + b0 * wb, wb, xe, d, 1.f, gw3 + l * wb * d, d, go);
        });
        float* dxe = &dx_leaf[size_t(l)][size_t(r0 * d)];
        sgemm(Trans::kNo, Trans::kNo, n, d, wb, 1.f, dg + r0 * wb, wb, p.w1[size_t(e0 + e)] + row * d, d, 0.f, dxe, d, go);
        sgemm(Trans::kNo, Trans::kNo, n, d, wb, 1.f, du + r0 * wb, wb, p.w3[size_t(e0 + e)] + row * d, d, 1.f, dxe, d, go);
      }
      add_pairwise(dx_leaf.data(), L, r0 * d, (r0 + n) * d);
      add_pairwise(dw_leaf.data(), L, r0, r0 + n);
    });
  }
  if (ep) {
    // Back to the sources: each row's input gradient with its routing-weight gradient.
    TREX_TRACE(kMoeDispatch, "moe.combine_grad.exchange");
    float* packed = s.ex->send_slot(s.recv_rows.data(), d + 1);  // one copy, as in the forward
    if (!packed) {
      State::fit(s.recvbuf, size_t(R * (d + 1)));
      packed = s.recvbuf.data();
    }
    for (int64_t r = 0; r < R; ++r) {
      float* row = &packed[size_t(s.perm[size_t(r)] * (d + 1))];
      std::memcpy(row, &w.dxs[size_t(r * d)], sizeof(float) * size_t(d));
      row[d] = w.dw[size_t(r)];
    }
    State::fit(s.partbuf, size_t(s.S * TK * (d + 1)));
    s.ex->start_rows(packed, s.recv_rows.data(), s.partbuf.data(), s.send_rows.data(), d + 1);
    s.ex->finish_rows();
    // Under ETP each shard's input and routing-weight gradients are partial sums over its slice
    // of the width; they are added pairwise in shard order (as the forward's outputs).
    pool.parallel_for(0, TK, 64, [&](int64_t lo, int64_t hi) {
      std::vector<float*> part(static_cast<size_t>(s.S));
      for (int64_t r = lo; r < hi; ++r) {
        for (int64_t j = 0; j < s.S; ++j) part[size_t(j)] = &s.partbuf[size_t(s.sent_row(r, j) * (d + 1))];
        add_pairwise(part.data(), s.S, 0, d + 1);
        std::memcpy(&w.dxs[size_t(r * d)], part[0], sizeof(float) * size_t(d));
        w.dw[size_t(r)] = part[0][d];
      }
    });
  } else {
    shared_backward();
  }
  if (T == 0) return;
  {
    TREX_TRACE(kMoeDispatch, "moe.combine_grad");
    // Routing-weight gradient through w_k = gamma s_k / S, then through s = sqrt(softplus(l)):
    // ds_m = (gamma / S)(dw_m - sum_k dw_k w_k / gamma),  dl = ds sigma(l) / (2 s).
    std::fill(w.dl.begin(), w.dl.begin() + T * E, 0.f);
    pool.parallel_for(0, T, 16, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) {
        const int32_t* sel = &s.sel[size_t(t * K)];
        const float* sc = &s.scores[size_t(t * E)];
        const float* l = &s.logits[size_t(t * E)];
        float sum = 0, dot = 0;
        for (int64_t k = 0; k < K; ++k) {
          sum += sc[sel[k]];
          dot += w.dw[size_t(s.slot[size_t(t * K + k)])] * s.w[size_t(t * K + k)];
        }
        float* dl = &w.dl[size_t(t * E)];
        for (int64_t k = 0; k < K; ++k) {
          int32_t m = sel[k];
          float dwm = w.dw[size_t(s.slot[size_t(t * K + k)])];
          float ds = s.gamma / sum * (dwm - dot / s.gamma);
          dl[m] = sc[m] > 0 ? ds * sigmoid(l[m]) / (2.f * sc[m]) : 0.f;
        }
        float* o = dx + t * d;
        for (int64_t k = 0; k < K; ++k) {
          const float* y = &w.dxs[size_t(s.slot[size_t(t * K + k)] * d)];
          for (int64_t i = 0; i < d; ++i) o[i] += y[i];
        }
      }
    });
  }
  TREX_TRACE(kGemm, "moe.gate.bwd");
  sgemm(Trans::kYes, Trans::kNo, E, d, T, 1.f, w.dl.data(), E, x, d, 1.f, g.gate, d);
  sgemm(Trans::kNo, Trans::kNo, T, d, E, 1.f, w.dl.data(), E, p.gate, d, 1.f, dx, d);
}

}  // namespace trex::model
