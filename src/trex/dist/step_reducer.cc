#include "trex/dist/step_reducer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "trex/core/thread_pool.h"
#include "trex/core/trace.h"
#include "trex/dist/session.h"

namespace trex::dist {
namespace {

// dst[i] += src[i], in parallel over elements (each element's order is unchanged).
void add_into(float* dst, const float* src, int64_t n) {
  core::default_thread_pool().parallel_for(0, n, 1 << 16, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) dst[i] += src[i];
  });
}

// The sum of squares of one chunk, in four lanes (as trex always computed the norm).
double chunk_squares(const float* g, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += double(g[i]) * g[i];
    s1 += double(g[i + 1]) * g[i + 1];
    s2 += double(g[i + 2]) * g[i + 2];
    s3 += double(g[i + 3]) * g[i + 3];
  }
  for (; i < n; ++i) s0 += double(g[i]) * g[i];
  return (s0 + s1) + (s2 + s3);
}

// The chunks' sums of squares of g [n] (chunk c covers [c C, (c + 1) C)).
std::vector<double> chunk_sums(const float* g, int64_t n) {
  std::vector<double> out(size_t((n + kNormChunk - 1) / kNormChunk));
  core::default_thread_pool().parallel_for(0, int64_t(out.size()), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c)
      out[size_t(c)] = chunk_squares(g + c * kNormChunk, std::min(kNormChunk, n - c * kNormChunk));
  });
  return out;
}

}  // namespace

double chunked_grad_norm(const float* g, int64_t n) {
  double total = 0;
  for (double s : chunk_sums(g, n)) total += s;
  return std::sqrt(total);
}

StepReducer::StepReducer(Context& context, model::Transformer& model)
    : context_(context), model_(model), map_(model, context.layout(), context.world_size()) {
  n_ = model.layout().total;
  const model::ModelConfig& c = model.config();
  const int layers = model.moe_layers();
  const int R = context.world_size(), me = context.rank();
  load_.assign(size_t(layers), std::vector<int64_t>(size_t(c.ffn.routed_experts), 0));
  size_ = map_.size(me);
  starts_.push_back(0);
  for (const ShardRange& r : map_.ranges(me)) starts_.push_back(starts_.back() + r.size());
  acc_.assign(size_t(size_), 0.f);
  model.set_grad_final_hook([this](int64_t lo, int64_t hi) { grads_final(lo, hi); });
  if (R == 1) return;

  // Expert segments: every routed expert's gradient of every rank's micro-batch, cut where the
  // rank holding it changes, in the order that rank adds them (source rank, layer, expert, shard).
  if (context.expert_exchange() != nullptr) {
    const ParallelLayout& L = context.layout();
    const int64_t f = c.ffn.expert_hidden, d = c.hidden, fs = f / L.etp, fsd = fs * d;
    const int El = c.ffn.routed_experts / L.ep, group = L.ep * L.etp;
    for (int i = 0; i < layers; ++i) {
      layer_extra_offset_.push_back(extra_);
      extra_ += int64_t(model.moe_source_grads(i).size());
    }
    auto add = [&](int source, int owner, int64_t begin, int64_t count, int64_t from) {
      while (count > 0) {
        const OwnedRun& o = map_.run_at(begin);
        const int64_t piece = std::min(count, o.end - begin);
        segments_.push_back({source, owner, o.rank, begin, piece, from, o.at + (begin - o.begin)});
        begin += piece, from += piece, count -= piece;
      }
    };
    for (int r = 0; r < R; ++r) {
      const int src = r % group;
      for (int i = 0; i < layers; ++i)
        for (int e = 0; e < c.ffn.routed_experts; ++e) {
          const std::string ex = model.moe_prefix(i) + "ffn.experts." + std::to_string(e) + ".";
          const int64_t w1 = model.layout().offset_of(ex + "w1"), w2 = model.layout().offset_of(ex + "w2"),
                        w3 = model.layout().offset_of(ex + "w3");
          for (int j = 0; j < L.etp; ++j) {
            const int owner = L.rank_of(L.edp_of(r), e / El, j);
            const int64_t base = layer_extra_offset_[size_t(i)] + (int64_t(src) * El + e % El) * 3 * fsd;
            // Shard j of expert e: rows [j fs, (j + 1) fs) of w1 and w3, those columns of w2.
            add(r, owner, w1 + j * fsd, fsd, base);
            if (L.etp == 1)
              add(r, owner, w2, fsd, base + fsd);
            else
              for (int64_t row = 0; row < d; ++row) add(r, owner, w2 + row * f + j * fs, fs, base + fsd + row * fs);
            add(r, owner, w3 + j * fsd, fsd, base + 2 * fsd);
          }
        }
    }
  }
  send_count_.assign(size_t(R), 0);
  recv_count_.assign(size_t(R), 0);
  // Region offsets of every rank (its dense part is the other ranks' shards: sizes differ).
  auto round_up = [](int64_t b) { return (b + 63) / 64 * 64; };
  int64_t region = 0;
  for (int q = 0; q < R; ++q) {
    const int64_t extra_at = 64 + round_up(int64_t(sizeof(float)) * (n_ - map_.size(q)));
    const int64_t weights_at = extra_at + round_up(int64_t(sizeof(float)) * extra_);
    shm_extra_.push_back(extra_at);
    shm_weights_.push_back(weights_at);
    if (q == me) region = weights_at + round_up(int64_t(sizeof(core::bf16)) * size_);
  }
  shm_ = SharedWindow::create(context.world(), region);
  // First touch now (the pages of a fresh window fault in on first write; measured up to ~10 s
  // of the first step of v4-micro on a loaded machine), not inside the first step.
  if (shm_) std::memset(shm_->region(me), 0, size_t(region));
  if (!shm_) dense_recv_.assign(size_t(R) * size_t(size_), 0.f);
  for (const Segment& s : segments_) {
    if (s.owner == me) send_count_[size_t(s.dest)] += s.count;
    if (s.dest == me) {
      recv_count_[size_t(s.owner)] += s.count;
      expert_spans_.push_back({s.at, s.at + s.count});
    }
  }
  std::sort(expert_spans_.begin(), expert_spans_.end(),
            [](const ShardRange& a, const ShardRange& b) { return a.begin < b.begin; });
  std::vector<ShardRange> merged;
  for (const ShardRange& s : expert_spans_)
    if (!merged.empty() && s.begin <= merged.back().end)
      merged.back().end = std::max(merged.back().end, s.end);
    else
      merged.push_back(s);
  expert_spans_ = std::move(merged);
  plan_norm();
}

void StepReducer::plan_norm() {
  const int R = context_.world_size(), me = context_.rank();
  const int64_t chunks = (n_ + kNormChunk - 1) / kNormChunk;
  const std::vector<OwnedRun>& runs = map_.runs();
  // Chunk c is summed by the rank holding its first element.
  auto chunk_rank = [&](int64_t c) { return map_.run_at(c * kNormChunk).rank; };
  norm_chunks_of_.assign(size_t(R), {});
  for (int64_t c = 0; c < chunks; ++c) norm_chunks_of_[size_t(chunk_rank(c))].push_back(c);
  for (const auto& v : norm_chunks_of_) norm_per_ = std::max<int64_t>(norm_per_, int64_t(v.size()));
  norm_chunks_ = norm_chunks_of_[size_t(me)];
  norm_pieces_.assign(norm_chunks_.size(), {});
  norm_send_count_.assign(size_t(R), 0);
  norm_recv_count_.assign(size_t(R), 0);
  // Every piece (a run cut at chunk boundaries) in flat order; the ones crossing ranks are sent
  // per destination in flat order, so both sides list them alike.
  struct Crossing { int from_rank, to_rank; int64_t begin, count, at; };
  std::vector<Crossing> crossing;
  for (const OwnedRun& o : runs)
    for (int64_t c = o.begin / kNormChunk; c * kNormChunk < o.end; ++c) {
      const int64_t a = std::max(o.begin, c * kNormChunk), b = std::min(o.end, (c + 1) * kNormChunk);
      const int to = chunk_rank(c);
      if (to == o.rank) {
        if (to == me) {
          const size_t k = size_t(std::lower_bound(norm_chunks_.begin(), norm_chunks_.end(), c) - norm_chunks_.begin());
          norm_pieces_[k].push_back({a - c * kNormChunk, b - a, o.at + (a - o.begin), false});
        }
      } else {
        crossing.push_back({o.rank, to, a, b - a, o.at + (a - o.begin)});
        norm_exchange_ = true;
      }
    }
  std::stable_sort(crossing.begin(), crossing.end(), [](const Crossing& x, const Crossing& y) { return x.to_rank < y.to_rank; });
  for (const Crossing& x : crossing)
    if (x.from_rank == me) {
      norm_out_.push_back({x.at, x.count});
      norm_send_count_[size_t(x.to_rank)] += x.count;
    }
  std::stable_sort(crossing.begin(), crossing.end(), [](const Crossing& x, const Crossing& y) { return x.from_rank < y.from_rank; });
  int64_t recv_at = 0;
  for (const Crossing& x : crossing)
    if (x.to_rank == me) {
      const int64_t c = x.begin / kNormChunk;
      const size_t k = size_t(std::lower_bound(norm_chunks_.begin(), norm_chunks_.end(), c) - norm_chunks_.begin());
      norm_pieces_[k].push_back({x.begin - c * kNormChunk, x.count, recv_at, true});
      norm_recv_count_[size_t(x.from_rank)] += x.count;
      recv_at += x.count;
    }
}

StepReducer::~StepReducer() { model_.set_grad_final_hook({}); }

int64_t StepReducer::dense_slot(int w, int q) const {
  int64_t at = 0;
  for (int p = 0; p < q; ++p)
    if (p != w) at += map_.size(p);
  return at;
}

void StepReducer::gradient_region_writable() {
  if (!grad_readers_) return;
  shm_->sync("gradient exchange (readers of the last round)");
  grad_readers_ = false;
}

void StepReducer::grads_final(int64_t lo, int64_t hi) {
  if (context_.world_size() > 1) post_pieces(lo, hi);
  if (!stream_) return;
  buckets_posted_.push_back({lo, hi});
  take_arrived();
}

void StepReducer::stream_round(ReducedHook hook) {
  stream_ = std::move(hook);
  buckets_posted_.clear();
  held_.clear();
  taken_ = 0;
  round_base_ = published_;
}

ShardRange StepReducer::in_shard(const ShardRange& flat) const {
  return map_.packed_within(context_.rank(), flat.begin, flat.end);
}

bool StepReducer::arrived(size_t bucket) const {
  const int R = context_.world_size(), me = context_.rank();
  if (R == 1) return true;
  if (!shm_) return context_.world().exchanges_done() > int64_t(bucket);
  // Every rank posts the same ranges in the same order, so bucket k of this round is the
  // (round_base_ + k + 1)-th range each of them publishes.
  for (int r = 0; r < R; ++r)
    if (r != me && std::atomic_ref<int64_t>(*published_count(r)).load(std::memory_order_acquire) <=
                       round_base_ + int64_t(bucket))
      return false;
  return true;
}

void StepReducer::take_arrived() {
  while (taken_ < buckets_posted_.size()) {
    const ShardRange s = in_shard(buckets_posted_[taken_]);
    if (s.size() > 0) {
      if (!arrived(taken_)) return;
      TREX_TRACE(kOther, "dist.reduce_early");
      sum_dense(s.begin, s.end);
      auto after = std::upper_bound(expert_spans_.begin(), expert_spans_.end(), s.begin,
                                    [](int64_t v, const ShardRange& e) { return v < e.end; });
      if (after != expert_spans_.end() && after->begin < s.end)
        held_.push_back(s);  // its experts' gradients come in add_round
      else
        stream_(s.begin, s.end);
    }
    ++taken_;
  }
}

void StepReducer::take_while_waiting() {
  if (!stream_ || context_.world_size() == 1 || taken_ == buckets_posted_.size()) return;
  TREX_TRACE(kOther, "dist.reduce_early_wait");
  WatchdogScope watch("gradient exchange (streamed round)");
  for (;;) {
    if (!shm_) context_.world().progress_exchanges();
    take_arrived();
    if (taken_ == buckets_posted_.size()) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // (request_wait.h: leave the core)
  }
}

void StepReducer::sum_dense(int64_t lo, int64_t hi) {
  const int R = context_.world_size(), me = context_.rank();
  const int64_t m = size_;
  const std::vector<ShardRange>& mine = map_.ranges(me);
  // Per element the ranks' micro-batches in order (an expert's element is an exact zero in the
  // dense gradients under expert parallelism; its value is added from the owner after).
  std::vector<const float*> from(static_cast<size_t>(R));
  const bool own_in_place = R == 1 || shm_;  // this rank's piece straight from its gradient
  for (int r = 0; r < R; ++r)
    from[size_t(r)] = own_in_place && r == me ? nullptr
                      : shm_                  ? shm_floats(r, kShmDense) + dense_slot(r, me)
                                              : &dense_recv_[size_t(r) * size_t(m)];
  // One parallel loop over the packed span (under etp > 1 a shard is many short ranges, each
  // too short to split by itself); inside, range by range of this rank's shard, its own piece
  // at the range's flat offset. Each element adds the ranks in the same order as before.
  const int64_t end = std::min(hi, starts_[mine.size()]);
  core::default_thread_pool().parallel_for(lo, end, 1 << 16, [&](int64_t a, int64_t b) {
    size_t k = size_t(std::upper_bound(starts_.begin(), starts_.end(), a) - starts_.begin()) - 1;
    for (; a < b; ++k) {
      const int64_t e = std::min(b, starts_[k + 1]);
      const float* own = model_.grads() + (mine[k].begin - starts_[k]);  // own[i]: packed element i
      for (int r = 0; r < R; ++r) {
        const float* src = from[size_t(r)] ? from[size_t(r)] : own;
        for (int64_t i = a; i < e; ++i) acc_[size_t(i)] += src[i];
      }
      a = e;
    }
  });
}

void StepReducer::sum_rest() {
  if (!stream_) {
    sum_dense(0, size_);
    return;
  }
  for (size_t k = taken_; k < buckets_posted_.size(); ++k) {
    const ShardRange s = in_shard(buckets_posted_[k]);
    if (s.size() > 0) sum_dense(s.begin, s.end);
  }
}

void StepReducer::hand_on_rest() {
  if (!stream_) return;
  for (const ShardRange& s : held_) stream_(s.begin, s.end);
  for (size_t k = taken_; k < buckets_posted_.size(); ++k) {
    const ShardRange s = in_shard(buckets_posted_[k]);
    if (s.size() > 0) stream_(s.begin, s.end);
  }
  stream_ = {};
  buckets_posted_.clear();
  held_.clear();
  taken_ = 0;
}

void StepReducer::post_pieces(int64_t lo, int64_t hi) {
  TREX_TRACE(kOther, "dist.post_bucket");
  const int R = context_.world_size();
  if (shm_) {
    // This rank's pieces of the other shards, into its region for their ranks to read.
    gradient_region_writable();
    const int me = context_.rank();
    float* out = shm_floats(me, kShmDense);
    const std::vector<OwnedRun>& runs = map_.runs();
    for (size_t k = map_.run_index(lo); k < runs.size() && runs[k].begin < hi; ++k) {
      const OwnedRun& o = runs[k];
      const int64_t a = std::max(lo, o.begin), b = std::min(hi, o.end);
      if (o.rank == me || b <= a) continue;
      std::memcpy(out + dense_slot(me, o.rank) + o.at + (a - o.begin), model_.grads() + a, sizeof(float) * size_t(b - a));
    }
    std::atomic_ref<int64_t>(*published_count(me)).store(++published_, std::memory_order_release);
    reported_ += hi - lo;
    ++posted_;
    return;
  }
  std::vector<int64_t> sc(size_t(R), 0), sd(size_t(R), 0), rc(size_t(R), 0), rd(size_t(R), 0);
  const ShardRange mine = map_.packed_within(context_.rank(), lo, hi);
  const int64_t m = size_;
  // Each rank's elements of [lo, hi), packed in its shard's order, one after the other (kept
  // until add_round() has waited for the exchange).
  std::vector<float>& buf = staging_.emplace_back();
  const std::vector<OwnedRun>& runs = map_.runs();
  const size_t first = map_.run_index(lo);
  for (int q = 0; q < R; ++q) {
    sd[size_t(q)] = int64_t(buf.size());
    for (size_t k = first; k < runs.size() && runs[k].begin < hi; ++k)
      if (runs[k].rank == q) {
        const int64_t a = std::max(lo, runs[k].begin), b = std::min(hi, runs[k].end);
        buf.insert(buf.end(), model_.grads() + a, model_.grads() + b);
      }
    sc[size_t(q)] = int64_t(buf.size()) - sd[size_t(q)];
    rc[size_t(q)] = mine.size();
    rd[size_t(q)] = int64_t(q) * m + mine.begin;
  }
  context_.world().post_exchange(buf.data(), sc.data(), sd.data(), dense_recv_.data(), rc.data(), rd.data());
  context_.world().progress_exchanges();
  reported_ += hi - lo;
  ++posted_;
}

int64_t StepReducer::floats_per_round() const {
  if (context_.world_size() == 1) return 0;
  int64_t total = n_;
  for (int64_t v : send_count_) total += v;
  return total;
}

void StepReducer::begin_step() {
  std::fill(acc_.begin(), acc_.end(), 0.f);
  ce_ = 0;
  for (auto& l : load_) std::fill(l.begin(), l.end(), 0);
}

void StepReducer::add_round(const model::LossStats& st) {
  TREX_TRACE(kOther, "dist.reduce_round");
  const auto& last = model_.expert_load();
  for (size_t i = 0; i < load_.size(); ++i)
    for (size_t e = 0; e < load_[i].size(); ++e) load_[i][e] += last[i][e];
  const int R = context_.world_size(), me = context_.rank();
  if (R == 1) {
    sum_rest();
    ce_ += st.ce_sum;
    hand_on_rest();
    return;
  }
  // The dense pieces posted during the backward.
  if (reported_ != n_)
    throw std::logic_error("StepReducer: the backward reported " + std::to_string(reported_) + " of " +
                           std::to_string(n_) + " gradients final");
  if (shm_) {
    add_round_shared(st);
    return;
  }
  // This rank's expert source gradients, all layers in a row.
  extra_buf_.resize(size_t(extra_));
  for (size_t i = 0; i < layer_extra_offset_.size(); ++i) {
    std::span<const float> sg = model_.moe_source_grads(int(i));
    std::memcpy(&extra_buf_[size_t(layer_extra_offset_[i])], sg.data(), sizeof(float) * sg.size());
  }
  take_while_waiting();
  context_.world().wait_exchanges();
  staging_.clear();
  buckets_ = posted_;
  reported_ = posted_ = 0;
  // To each shard's rank: the expert segments of the shard that this rank owns, in order.
  int64_t total_send = 0, total_recv = 0;
  for (int q = 0; q < R; ++q) total_send += send_count_[size_t(q)], total_recv += recv_count_[size_t(q)];
  send_.resize(size_t(total_send));
  recv_.resize(size_t(total_recv));
  std::vector<int64_t> send_at(size_t(R), 0), recv_at(size_t(R), 0);
  for (int q = 1; q < R; ++q) {
    send_at[size_t(q)] = send_at[size_t(q - 1)] + send_count_[size_t(q - 1)];
    recv_at[size_t(q)] = recv_at[size_t(q - 1)] + recv_count_[size_t(q - 1)];
  }
  {
    std::vector<int64_t> put = send_at;
    for (const Segment& g : segments_) {
      if (g.owner != me) continue;
      std::memcpy(&send_[size_t(put[size_t(g.dest)])], &extra_buf_[size_t(g.from)], sizeof(float) * size_t(g.count));
      put[size_t(g.dest)] += g.count;
    }
  }
  if (extra_ > 0) {
    context_.world().start_alltoallv(send_.data(), send_count_.data(), recv_.data(), recv_count_.data(), 1);
    context_.world().finish_alltoallv();
  }
  std::vector<double> ce(static_cast<size_t>(R));
  context_.world().allgather(&st.ce_sum, 1, ce.data());

  // The dense pieces (those summed during a streamed backward are done), then the experts.
  sum_rest();
  std::vector<int64_t> take(static_cast<size_t>(R));
  for (int o = 0; o < R; ++o) take[size_t(o)] = recv_at[size_t(o)];
  for (const Segment& g : segments_) {
    if (g.dest != me) continue;
    add_into(&acc_[size_t(g.at)], &recv_[size_t(take[size_t(g.owner)])], g.count);
    take[size_t(g.owner)] += g.count;
  }
  for (int r = 0; r < R; ++r) ce_ += ce[size_t(r)];
  hand_on_rest();
}

void StepReducer::add_round_shared(const model::LossStats& st) {
  const int R = context_.world_size(), me = context_.rank();
  gradient_region_writable();  // (no final range was reported yet if the model had none)
  float* extra = shm_floats(me, shm_extra_[size_t(me)]);
  for (size_t i = 0; i < layer_extra_offset_.size(); ++i) {
    std::span<const float> sg = model_.moe_source_grads(int(i));
    std::memcpy(extra + layer_extra_offset_[i], sg.data(), sizeof(float) * sg.size());
  }
  *static_cast<double*>(shm_->region(me)) = st.ce_sum;
  take_while_waiting();
  shm_->sync("gradient exchange");
  buckets_ = posted_;
  reported_ = posted_ = 0;
  // The same sums as the message path: per element the ranks' micro-batches in order (this
  // rank's own piece straight from its gradient), then the expert segments in order.
  sum_rest();
  for (const Segment& g : segments_) {
    if (g.dest != me) continue;
    add_into(&acc_[size_t(g.at)], shm_floats(g.owner, shm_extra_[size_t(g.owner)]) + g.from, g.count);
  }
  for (int r = 0; r < R; ++r) ce_ += *static_cast<const double*>(shm_->region(r));
  grad_readers_ = true;
  hand_on_rest();
}

void StepReducer::finish_step() {
  if (context_.world_size() == 1) return;
  std::vector<int64_t> flat;
  for (const auto& l : load_) flat.insert(flat.end(), l.begin(), l.end());
  context_.world().allreduce_sum(flat.data(), int64_t(flat.size()));
  // Every rank enters the all-reduce after its last reads of the step: the regions are free.
  if (!flat.empty()) grad_readers_ = weight_readers_ = false;
  size_t k = 0;
  for (auto& l : load_)
    for (int64_t& v : l) v = flat[k++];
}

double StepReducer::grad_norm() const {
  const int R = context_.world_size();
  if (R == 1) return chunked_grad_norm(acc_.data(), n_);
  // The pieces of this rank's chunks held by other ranks.
  std::vector<float> sent, got;
  if (norm_exchange_) {
    for (const auto& [at, count] : norm_out_) sent.insert(sent.end(), acc_.data() + at, acc_.data() + at + count);
    int64_t total = 0;
    for (int64_t v : norm_recv_count_) total += v;
    got.resize(size_t(total));
    context_.world().start_alltoallv(sent.data(), norm_send_count_.data(), got.data(), norm_recv_count_.data(), 1);
    context_.world().finish_alltoallv();
  }
  // This rank's chunks' sums (a chunk in one piece read in place), padded to norm_per_,
  // gathered, and added in chunk order.
  std::vector<double> mine(size_t(norm_per_), 0.0);
  core::default_thread_pool().parallel_for(0, int64_t(norm_chunks_.size()), 1, [&](int64_t lo, int64_t hi) {
    std::vector<float> tmp;
    for (int64_t k = lo; k < hi; ++k) {
      const int64_t c = norm_chunks_[size_t(k)], len = std::min(kNormChunk, n_ - c * kNormChunk);
      const std::vector<NormPiece>& ps = norm_pieces_[size_t(k)];
      if (ps.size() == 1 && !ps[0].received && ps[0].count == len) {
        mine[size_t(k)] = chunk_squares(acc_.data() + ps[0].from, len);
        continue;
      }
      tmp.assign(size_t(len), 0.f);
      for (const NormPiece& p : ps)
        std::memcpy(&tmp[size_t(p.offset)], (p.received ? got.data() : acc_.data()) + p.from, sizeof(float) * size_t(p.count));
      mine[size_t(k)] = chunk_squares(tmp.data(), len);
    }
  });
  std::vector<double> all(size_t(norm_per_ * R));
  context_.world().allgather(mine.data(), norm_per_, all.data());
  grad_readers_ = weight_readers_ = false;  // (as in finish_step: entered after every read)
  std::vector<double> by_chunk(size_t((n_ + kNormChunk - 1) / kNormChunk), 0.0);
  for (int q = 0; q < R; ++q)
    for (size_t k = 0; k < norm_chunks_of_[size_t(q)].size(); ++k)
      by_chunk[size_t(norm_chunks_of_[size_t(q)][k])] = all[size_t(q * norm_per_) + k];
  double total = 0;
  for (double v : by_chunk) total += v;
  return std::sqrt(total);
}

void StepReducer::gather_weights(const core::bf16* mine, core::bf16* weights) const {
  const int R = context_.world_size(), me = context_.rank();
  if (R == 1) return;
  // Rank q's packed shard `from` -> its ranges of weights.
  auto scatter = [&](int q, const core::bf16* from) {
    int64_t at = 0;
    for (const ShardRange& r : map_.ranges(q)) {
      if (from + at != weights + r.begin) std::copy(from + at, from + at + r.size(), weights + r.begin);
      at += r.size();
    }
  };
  if (shm_) {
    if (weight_readers_) shm_->sync("weights (readers of the last step)");
    weight_readers_ = false;
    auto at = [&](int q) {
      return reinterpret_cast<core::bf16*>(static_cast<char*>(shm_->region(q)) + shm_weights_[size_t(q)]);
    };
    std::copy(mine, mine + size_, at(me));
    shm_->sync("weights");
    for (int q = 0; q < R; ++q) scatter(q, q == me ? mine : at(q));
    weight_readers_ = true;
    return;
  }
  int64_t per = 0;
  for (int q = 0; q < R; ++q) per = std::max(per, map_.size(q));
  std::vector<core::bf16> padded(static_cast<size_t>(per)), all(static_cast<size_t>(per * R));
  std::copy(mine, mine + size_, padded.begin());
  context_.world().allgather_bytes(padded.data(), per * int64_t(sizeof(core::bf16)), all.data());
  for (int q = 0; q < R; ++q) scatter(q, q == me ? mine : all.data() + q * per);
}

}  // namespace trex::dist
