// BatchDecoder: the Transformer's forward for one new token of each of several sequences (see
// batch_decoder.h), composed from the same kernels and layers as the training forward: mHC
// pre/post/head, RMSNorm, AttentionLayer::decode_rows per group of rows, the MoE layer (MoeLayer
// on one lane, MoeDecode's phases on several), the LM head as one multi-row matrix-vector
// product. Several lanes split the rows for attention and the weights for the MoE and the head.
#include "trex/model/batch_decoder.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "trex/core/safetensors.h"
#include "trex/core/thread_pool.h"
#include "trex/core/trace.h"
#include "trex/kernels/mhc.h"
#include "trex/kernels/rmsnorm.h"
#include "trex/model/block_tensors.h"
#include "trex/model/lane_work.h"
#include "trex/model/packed_weights.h"
#include "trex/model/moe.h"
#include "trex/model/moe_decode.h"
#include "trex/util/error.h"

namespace trex::model {

namespace {

struct LayerParams {
  AttentionParams attn;
  MoeParams moe;
  const float* attn_norm = nullptr;
  const float* ffn_norm = nullptr;
  const float* hc_fn[2] = {};    // attn site, ffn site
  const float* hc_base[2] = {};
  const float* hc_scale[2] = {};
};

void check_ids(std::span<const int32_t> ids, int vocab) {
  for (int32_t id : ids)
    if (id < 0 || id >= vocab)
      throw InputError::field("token", "id " + std::to_string(id) + " outside [0, " +
                                           std::to_string(vocab) + ")");
}

// Where the threads of a step meet between its phases (twice per layer and before the head): a
// waiter spins 0.85 ms (by the clock: 30000 pauses of ~28 ns on this EPYC), since a phase lasts tens to
// hundreds of microseconds and a futex wake costs tens, then sleeps on the generation word until
// the last thread arrives. 10000 pauses (~0.3 ms) was too short under `trex serve` with eight
// streams: the HTTP threads and the clients preempt a lane for longer than that, and the waiter
// that went to sleep came back late. Through HTTP (64 tokens, 8 clients, quiet lane at load
// 12-15, session 13), four holds of 8-10 runs each, medians 10000 vs 30000: 3017 vs 3598, 1672
// vs 3605, 3630 vs 3758, 2850 vs 3790 tok/s; 17 of 36 runs with 10000 fell to ~1500-2500, 2 of
// 36 with 30000 (100000: 3346 in one hold). Not ms longer:
// spinning for ms left a partner thread that the scheduler had put on the same core
// waiting for the spinner's time slice; and not sched_yield: that handed the core to a background
// process for its whole slice (session 9 of issue 16). A thread that fails breaks the barrier, so
// the others throw instead of waiting for it: those already waiting wake on the generation that
// break_all() raises, and one that arrives after it sees broken_ as soon as it has read the
// generation (break_all stores broken_ before raising it), before it counts itself in: it would
// otherwise wait for a generation that no one will raise again.
class StepBarrier {
 public:
  void reset(int threads) {
    threads_ = threads;
    arrived_.store(0, std::memory_order_relaxed);
    broken_.store(false, std::memory_order_relaxed);
  }
  // A thread that has finished its part of a phase counts itself in and waits for the rest.
  void wait() {
    if (threads_ <= 1) return;
    const uint32_t gen = generation_.load(std::memory_order_acquire);
    if (broken_.load(std::memory_order_acquire)) throw_broken();
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == threads_) {
      arrived_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
      generation_.notify_all();
    }
    if (generation_.load(std::memory_order_acquire) == gen) {
      // The spin is bounded by time, not by pauses: a pause is ~28 ns on this EPYC but ~140
      // cycles on Intel Skylake and later, where 30000 of them would spin 1.2-1.4 ms. The clock
      // (a vDSO read, tens of ns) is read every kClockEvery pauses.
      const auto deadline = std::chrono::steady_clock::now() + kSpin;
      for (uint32_t spins = 1; generation_.load(std::memory_order_acquire) == gen; ++spins) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (spins % kClockEvery == 0 && std::chrono::steady_clock::now() >= deadline) {
          while (generation_.load(std::memory_order_acquire) == gen) generation_.wait(gen, std::memory_order_acquire);
          break;
        }
      }
    }
    if (broken_.load(std::memory_order_acquire)) throw_broken();
  }
  void break_all() {
    broken_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
  }

 private:
  static constexpr std::chrono::microseconds kSpin{850};  // 30000 pauses on this EPYC
  static constexpr uint32_t kClockEvery = 256;
  [[noreturn]] static void throw_broken() {
    throw std::runtime_error("decoding step: another thread failed");
  }

  int threads_ = 1;
  std::atomic<int> arrived_{0};
  std::atomic<uint32_t> generation_{0};
  std::atomic<bool> broken_{false};
};

// What one thread needs to run the step over its share of the rows: attention layers hold
// per-call state (their scratch), so each lane has its own, and its own working rows.
struct Lane {
  std::vector<AttentionLayer> attn;
  // The MoE layers of this lane's prefills (lanes past the first; the first uses the decoder's):
  // a layer keeps its scratch in itself, so two prompts prefilled at once need two of them.
  std::vector<MoeLayer> prefill_moe;
  MoeDecodeScratch moe;
  std::vector<float> X, X2, y, xn, F, pre, post, C, w;
  std::vector<AttentionCache*> caches;  // the step's rows' caches at one layer

  explicit Lane(const ModelConfig& c) {
    for (int l = 0; l < c.layers; ++l) attn.emplace_back(c, l);
  }

  void size_rows(const ModelConfig& c, int64_t B) {
    const int64_t n = c.mhc.streams, d = c.hidden;
    auto grow = [](std::vector<float>& v, int64_t k) {
      if (int64_t(v.size()) < k) v.resize(size_t(k));
    };
    grow(X, B * n * d);
    grow(X2, B * n * d);
    grow(y, B * d);
    grow(xn, B * d);
    grow(F, B * d);
    grow(pre, B * n);
    grow(post, B * n);
    grow(C, B * n * n);
    grow(w, B * n);
    if (int64_t(caches.size()) < B) caches.resize(size_t(B));
  }
};

}  // namespace

struct BatchDecoder::Impl {
  const Transformer& model;
  const ModelConfig& c;
  core::ThreadPool& pool;  // whose threads are the lanes
  // One lane per thread of the pool (prefill() runs on lane 0, prefill_many on all): a step of
  // B rows runs as min(threads, B) contiguous groups of rows, one per lane, in one dispatch of
  // the pool; with
  // more than one lane they meet at `barrier` around each MoE layer's experts and before the
  // head, whose work is split by weights instead of by rows (each weight read once per step).
  std::vector<Lane> lanes;
  std::vector<MoeLayer> moe;   // [layer] prefill's and one lane's MoE, and the routing state
  MoeDecode moe_step;          // the MoE phases of a step of several lanes (one layer at a time)
  std::vector<float> ffn_in;   // [B, d] the step's normed FFN inputs, all rows
  std::vector<float> head_in;  // [runs, d] the step's normed head inputs, one per slot's run
  // The step's rows: row b's run (its slot's consecutive rows) ends there at out_row[b] >= 0,
  // the run's index and its logits row; the lanes' row groups, [G + 1], never split a run.
  std::vector<int64_t> out_row, bounds;
  int64_t runs = 0;
  StepBarrier barrier;
  // The first exception of a step's lanes, kept before it breaks the barrier: the pool rethrows
  // thread 0's, which is the barrier's "another thread failed" when another lane failed first.
  std::mutex error_mu;
  std::exception_ptr first_error;
  std::function<void(int)> lane_hook;  // set_lane_hook_for_testing
  // Work the lanes of a step take one piece at a time, each lane its own part first (lane_work.h):
  // each layer's experts, the head's panels.
  std::vector<LaneWork> expert_work;  // [layer]
  LaneWork head_work;
  std::vector<std::vector<AttentionCache>> cache;  // [slot][layer]
  std::vector<int64_t> pos;                        // [slot]
  std::vector<LayerParams> layer;                  // resolved against params_base
  const float* params_base = nullptr;
  // Every step's matrix products run on packed copies of the weights (packed_matvec.h), one row
  // or many, so a row's bits do not depend on its batch; cleared when the parameters move.
  PackedWeights packed;
  std::vector<float> logits;                       // [B, V] of the last step
  std::vector<float> many;                         // [n, V] of the last prefill_many
  BatchDecoder::PrefillCounts counts;              // prefill_counts()

  Impl(const Transformer& m, int slots, core::ThreadPool* p)
      : model(m), c(m.config()), pool(core::pool_or_default(p)), moe_step(m.config()) {
    if (slots < 1) throw InputError::field("slots", "a decoder needs at least one slot");
    const int threads = std::max(1, pool.num_threads());
    for (int t = 0; t < std::min(threads, slots); ++t) lanes.emplace_back(c);
    for (int l = 0; l < c.layers; ++l) moe.emplace_back(c, l < c.ffn.hash_layers);
    for (size_t t = 1; t < lanes.size(); ++t)
      for (int l = 0; l < c.layers; ++l) lanes[t].prefill_moe.emplace_back(c, l < c.ffn.hash_layers);
    expert_work.resize(size_t(c.layers));
    cache.assign(size_t(slots), std::vector<AttentionCache>(size_t(c.layers)));
    pos.assign(size_t(slots), 0);
  }

  const float* tensor(const std::string& name) const {
    return model.params() + model.layout().offset_of(name);
  }

  LayerParams layer_params(int l) const {
    const std::string pre_s = "layers." + std::to_string(l) + ".";
    const ParamLayout& layout = model.layout();
    LayerParams p;
    p.attn = attention_tensors(layout, model.params(), pre_s);
    p.moe = moe_tensors(c, layout, model.params(), pre_s);
    p.attn_norm = tensor(pre_s + "attn_norm");
    p.ffn_norm = tensor(pre_s + "ffn_norm");
    const char* sites[2] = {"hc_attn_", "hc_ffn_"};
    for (int s = 0; s < 2; ++s) {
      p.hc_fn[s] = tensor(pre_s + sites[s] + "fn");
      p.hc_base[s] = tensor(pre_s + sites[s] + "base");
      p.hc_scale[s] = tensor(pre_s + sites[s] + "scale");
    }
    return p;
  }

  // The layers' parameter pointers, resolved again only if the model's array moved.
  void resolve() {
    if (params_base == model.params() && !layer.empty()) return;
    layer.clear();
    for (int l = 0; l < c.layers; ++l) layer.push_back(layer_params(l));
    params_base = model.params();
    packed.clear();
  }

  // The logits of the B rows of X1 [B, n, d] into out [B, V], with the lane's rows as scratch.
  // With `rows` (out_row of rows [0, B)), only the rows that end a run go through the head's
  // product, into out [runs, V] at their out_row: a prompt's chunk needs its last row's logits.
  void head(Lane& ln, const float* X1, int64_t B, float* out, const int64_t* rows = nullptr) {
    const int64_t d = c.hidden;
    kernels::mhc_head_forward(X1, tensor("hc_head_fn"), tensor("hc_head_base"),
                              tensor("hc_head_scale")[0], ln.y.data(), ln.w.data(),
                              mhc_shape(c, B));
    kernels::rmsnorm_forward(ln.y.data(), tensor("norm"), ln.xn.data(), B, d, float(c.norm_eps));
    int64_t n = B;
    if (rows) {
      // In place, front to back: a row moves to an index at or before its own.
      n = 0;
      for (int64_t b = 0; b < B; ++b) {
        if (rows[b] < 0) continue;
        if (rows[b] != b)
          std::memmove(ln.xn.data() + rows[b] * d, ln.xn.data() + b * d, size_t(d) * sizeof(float));
        ++n;
      }
    }
    matvec_rows(&packed, tensor("head"), ln.xn.data(), n, c.vocab, d, out);
  }

  // A whole prompt from position 0 as one batch: the GEMMs of every layer run over all its
  // tokens, AttentionLayer::prefill leaves each cache as token-by-token steps would, and only
  // the last token goes through the head.
  std::span<const float> prefill_batch(int slot, std::span<const int32_t> ids) {
    resolve();
    if (int64_t(logits.size()) < c.vocab) logits.resize(size_t(c.vocab));
    prefill_on(0, slot, ids, logits.data());
    ++counts.alone;
    return {logits.data(), size_t(c.vocab)};
  }

  // The MoE layer l of lane t's prefills.
  MoeLayer& prefill_moe(int t, int l) {
    return t == 0 ? moe[size_t(l)] : lanes[size_t(t)].prefill_moe[size_t(l)];
  }

  // prefill_batch on lane t (its attention and MoE layers and rows), the logits into out [V].
  // REQUIRES: resolve() done (lanes may run this at once, for distinct slots).
  void prefill_on(int t, int slot, std::span<const int32_t> ids, float* out) {
    TREX_TRACE(kOther, "generate.prefill");
    const int64_t T = int64_t(ids.size()), n = c.mhc.streams, d = c.hidden;
    Lane& ln = lanes[size_t(t)];
    kernels::MhcShape sh = mhc_shape(c, T);
    const float eps = float(c.norm_eps);
    std::vector<float> XT(size_t(T * n * d)), XT2(XT.size()), yT(size_t(T * d)), xnT(yT.size()),
        FT(yT.size()), preT(size_t(T * n)), postT(preT.size()), CT(size_t(T * n * n));
    const float* embed = tensor("embed");
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(XT.data() + (t * n + i) * d, embed + int64_t(ids[size_t(t)]) * d,
                    size_t(d) * sizeof(float));
    std::vector<AttentionCache>& slot_cache = cache[size_t(slot)];
    for (int l = 0; l < c.layers; ++l) {
      const LayerParams& p = layer[size_t(l)];
      kernels::mhc_pre_forward(XT.data(), p.hc_fn[0], p.hc_base[0], p.hc_scale[0], yT.data(),
                               preT.data(), postT.data(), CT.data(), sh);
      kernels::rmsnorm_forward(yT.data(), p.attn_norm, xnT.data(), T, d, eps);
      // Up to AttentionLayer::kPackedPrefillTokens tokens, the projections on the packed copies
      // too (a GEMM per projection packed the weight again on every call).
      static_assert(AttentionLayer::kPackedPrefillTokens == MoeLayer::kPackedFewTokens,
                    "a prompt leaves the packed copies in the attention and the MoE at one length");
      ln.attn[size_t(l)].prefill(p.attn, xnT.data(), T, slot_cache[size_t(l)], FT.data(), &packed);
      kernels::mhc_post_forward(FT.data(), XT.data(), postT.data(), CT.data(), XT2.data(), sh);
      std::swap(XT, XT2);
      kernels::mhc_pre_forward(XT.data(), p.hc_fn[1], p.hc_base[1], p.hc_scale[1], yT.data(),
                               preT.data(), postT.data(), CT.data(), sh);
      kernels::rmsnorm_forward(yT.data(), p.ffn_norm, xnT.data(), T, d, eps);
      // A prompt of up to MoeLayer::kPackedFewTokens tokens takes the layer's few-token products on the
      // packed copies, as a step does: the plain row-by-row products cost 56% of such a prefill
      // (perf, 16-token prompts, one thread), the packed kernel reads each weight once per block
      // of rows and panels. Longer prompts take the GEMM path, which ignores `packed`.
      prefill_moe(t, l).forward(p.moe, xnT.data(), ids.data(), T, FT.data(), nullptr, &packed);
      kernels::mhc_post_forward(FT.data(), XT.data(), postT.data(), CT.data(), XT2.data(), sh);
      std::swap(XT, XT2);
    }
    pos[size_t(slot)] = T;
    ln.size_rows(c, 1);
    head(ln, XT.data() + (T - 1) * n * d, 1, out);
  }

  // prefill_many (batch_decoder.h): the prompts that start their slot and have 2 to
  // kLanePrefillMaxTokens tokens run prefill_on, one prompt per lane at a time, taken in turn
  // (no lane waits for another: no barrier); longer ones run prefill_on(0) first, one after the
  // other, called from outside the lanes so that their kernels get the default pool's threads;
  // the rest go through prefill() one after the other.
  std::span<const float> prefill_many(std::span<const int> slots,
                                      std::span<const std::span<const int32_t>> prompts) {
    const size_t V = size_t(c.vocab), n = slots.size();
    resolve();
    if (many.size() < n * V) many.resize(n * V);
    std::vector<size_t> short_ones, long_ones;
    for (size_t i = 0; i < n; ++i) {
      if (pos[size_t(slots[i])] == 0 && prompts[i].size() > 1) {
        (int64_t(prompts[i].size()) <= kLanePrefillMaxTokens ? short_ones : long_ones).push_back(i);
      } else {
        std::span<const float> l = prefill_rows(slots[i], prompts[i]);
        std::copy(l.begin(), l.end(), many.begin() + ptrdiff_t(i * V));
      }
    }
    for (size_t i : long_ones) {
      prefill_on(0, slots[i], prompts[i], many.data() + i * V);
      ++counts.alone;
    }
    const int G = pool.running_here() ? 1 : int(std::min(lanes.size(), short_ones.size()));
    if (G <= 1) {
      for (size_t i : short_ones) prefill_on(0, slots[i], prompts[i], many.data() + i * V);
      counts.alone += int64_t(short_ones.size());
    } else {
      // Each prompt's kernels run on its lane's thread, with the bits they have on any number
      // of threads: serial when the lanes' pool is the default pool (a nested run of it goes
      // serial), else their runs of the default pool take turns.
      std::atomic<size_t> next{0};
      pool.run([&](int t) {
        if (t >= G) return;
        for (;;) {
          if (lane_hook) lane_hook(t);
          const size_t k = next.fetch_add(1, std::memory_order_relaxed);
          if (k >= short_ones.size()) return;
          const size_t i = short_ones[k];
          prefill_on(t, slots[i], prompts[i], many.data() + i * V);
        }
      });
      counts.on_lanes += int64_t(short_ones.size());
    }
    return {many.data(), n * V};
  }

  // A prompt token by token from wherever its slot is (prefill() past position 0, or of one
  // token): the logits after the last.
  std::span<const float> prefill_rows(int slot, std::span<const int32_t> ids) {
    std::span<const float> out;
    const int s[1] = {slot};
    for (int32_t id : ids) out = step(s, std::span<const int32_t>(&id, 1));
    return out;
  }

  // Rows [b0, b0 + R) of the step's tokens embedded into the lane's X, one copy per mHC stream.
  void embed_rows(Lane& ln, std::span<const int32_t> ids, int64_t b0, int64_t R) {
    const int64_t n = c.mhc.streams, d = c.hidden;
    const float* embed = tensor("embed");
    for (int64_t b = 0; b < R; ++b)
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(ln.X.data() + (b * n + i) * d, embed + int64_t(ids[size_t(b0 + b)]) * d,
                    size_t(d) * sizeof(float));
  }

  // Layer l's attention site for rows [b0, b0 + R): each row against its own sequence's cache,
  // the projections batched; the residual streams move from X to X2, then the two swap.
  void attention_site(Lane& ln, int l, std::span<const int> slots, int64_t b0, int64_t R,
                      const kernels::MhcShape& sh, float*& X, float*& X2) {
    const LayerParams& p = layer[size_t(l)];
    float *y = ln.y.data(), *xn = ln.xn.data(), *F = ln.F.data(), *pre = ln.pre.data(),
          *post = ln.post.data(), *C = ln.C.data();
    kernels::mhc_pre_forward(X, p.hc_fn[0], p.hc_base[0], p.hc_scale[0], y, pre, post, C, sh);
    kernels::rmsnorm_forward(y, p.attn_norm, xn, R, c.hidden, float(c.norm_eps));
    for (int64_t b = 0; b < R; ++b) ln.caches[size_t(b)] = &cache[size_t(slots[size_t(b0 + b)])][size_t(l)];
    ln.attn[size_t(l)].decode_rows(p.attn, xn, R, ln.caches.data(), F, &packed);
    kernels::mhc_post_forward(F, X, post, C, X2, sh);
    std::swap(X, X2);
  }

  // A step on one lane: embedding, every layer, the head into the rows' logits.
  void step_one_lane(Lane& ln, std::span<const int> slots, std::span<const int32_t> ids, int64_t b0,
                 int64_t b1) {
    const int64_t B = b1 - b0, d = c.hidden;
    const float eps = float(c.norm_eps);
    const kernels::MhcShape sh = mhc_shape(c, B);
    ln.size_rows(c, B);
    float *X = ln.X.data(), *X2 = ln.X2.data(), *y = ln.y.data(), *xn = ln.xn.data(),
          *F = ln.F.data(), *pre = ln.pre.data(), *post = ln.post.data(), *C = ln.C.data();
    embed_rows(ln, ids, b0, B);
    for (int l = 0; l < c.layers; ++l) {
      const LayerParams& p = layer[size_t(l)];
      attention_site(ln, l, slots, b0, B, sh, X, X2);
      // FFN site: the batch's tokens grouped per expert.
      kernels::mhc_pre_forward(X, p.hc_fn[1], p.hc_base[1], p.hc_scale[1], y, pre, post, C, sh);
      kernels::rmsnorm_forward(y, p.ffn_norm, xn, B, d, eps);
      // Up to MoeLayer::kFewTokens rows at once: for so few tokens the layer reads each weight
      // once for all of them by multi-row matrix-vector products that sum each row as it would
      // alone (its GEMM path packs whole weight panels per call, which at a handful of rows costs
      // more than it saves: bench/serve_bench measured 2 rows through it at 3.5x the CPU per token
      // of one row).
      for (int64_t r0 = 0; r0 < B; r0 += MoeLayer::kFewTokens) {
        const int64_t nb = std::min<int64_t>(MoeLayer::kFewTokens, B - r0);
        moe[size_t(l)].forward(p.moe, xn + r0 * d, ids.data() + b0 + r0, nb, F + r0 * d, nullptr, &packed);
      }
      kernels::mhc_post_forward(F, X, post, C, X2, sh);
      std::swap(X, X2);
    }
    head(ln, X, B, logits.data(), out_row.data() + b0);
  }

  // The head's panels per piece the lanes take (v4-nano's 256 panels: 22 pieces).
  static constexpr int kHeadPiece = 12;

  // Lane t of G's part of a step of B rows: its rows [b0, b1) through embedding, attention and
  // the norms; the experts of each MoE layer (moe_decode.h) and the pieces of the head's panels
  // that it takes, over all rows. Each weight of the MoE and the head is read by one lane for
  // every row.
  void step_lane(int t, int G, std::span<const int> slots, std::span<const int32_t> ids,
                 int64_t B) {
    if (lane_hook) lane_hook(t);
    Lane& ln = lanes[size_t(t)];
    const int64_t b0 = bounds[size_t(t)], b1 = bounds[size_t(t) + 1];
    const int64_t R = b1 - b0, d = c.hidden;
    const float eps = float(c.norm_eps);
    const kernels::MhcShape sh = mhc_shape(c, R);
    ln.size_rows(c, R);
    float *X = ln.X.data(), *X2 = ln.X2.data(), *y = ln.y.data(), *F = ln.F.data(),
          *pre = ln.pre.data(), *post = ln.post.data(), *C = ln.C.data();
    float* xf = ffn_in.data() + b0 * d;
    embed_rows(ln, ids, b0, R);
    for (int l = 0; l < c.layers; ++l) {
      const LayerParams& p = layer[size_t(l)];
      attention_site(ln, l, slots, b0, R, sh, X, X2);
      // FFN site: this lane's rows routed, then whole experts per lane over all rows, then this
      // lane's rows combined.
      kernels::mhc_pre_forward(X, p.hc_fn[1], p.hc_base[1], p.hc_scale[1], y, pre, post, C, sh);
      kernels::rmsnorm_forward(y, p.ffn_norm, xf, R, d, eps);
      moe_step.route(p.moe, moe[size_t(l)], ffn_in.data(), ids.data(), b0, b1, &packed);
      experts_phase(t, l, ln);
      moe_step.combine(b0, b1, F);
      kernels::mhc_post_forward(F, X, post, C, X2, sh);
      std::swap(X, X2);
    }
    kernels::mhc_head_forward(X, tensor("hc_head_fn"), tensor("hc_head_base"),
                              tensor("hc_head_scale")[0], y, ln.w.data(), sh);
    kernels::rmsnorm_forward(y, tensor("norm"), ln.xn.data(), R, d, eps);
    for (int64_t b = b0; b < b1; ++b)  // the rows that end their run: one head row each
      if (out_row[size_t(b)] >= 0)
        std::memcpy(head_in.data() + out_row[size_t(b)] * d, ln.xn.data() + (b - b0) * d,
                    size_t(d) * sizeof(float));
    barrier.wait();
    // The head's panels in pieces of kHeadPiece (v4-nano's 256 panels: 22 pieces), each lane its
    // own share first, then what is left of the others' (a lane held back by the scheduler leaves
    // the rest to the others).
    const PackedMatrix& hw = packed.get(tensor("head"), c.vocab, d);
    for (int k; (k = head_work.take(t)) >= 0;)
      packed_detail::panels_range(hw, head_in.data(), runs, logits.data(), int64_t(k) * kHeadPiece,
                                  std::min<int64_t>(hw.panels(), int64_t(k + 1) * kHeadPiece));
  }

  // Lane t's part of layer l's experts, after routing its rows: it waits for every lane's
  // routing, then takes its own items (the shared experts over every row in lane 0's, then routed
  // experts) and what is left of the others'; then it waits for every item before combining.
  void experts_phase(int t, int l, Lane& ln) {
    const LayerParams& p = layer[size_t(l)];
    LaneWork& work = expert_work[size_t(l)];
    barrier.wait();
    moe_step.order_routed(ln.moe);
    for (int i; (i = work.take(t)) >= 0;) moe_step.run_item(p.moe, ffn_in.data(), i, ln.moe, &packed);
    barrier.wait();
  }

  std::span<const float> step(std::span<const int> slots, std::span<const int32_t> ids) {
    TREX_TRACE(kOther, "generate.step");
    const int64_t B = int64_t(slots.size());
    check_ids(ids, c.vocab);
    resolve();
    if (int64_t(logits.size()) < B * c.vocab) logits.resize(size_t(B * c.vocab));
    // The slots' runs of rows (a slot given once is a run of one row) and where they end.
    out_row.assign(size_t(B), -1);
    std::vector<int64_t> starts;  // each run's first row, then B
    runs = 0;
    for (int64_t b = 0; b < B; ++b) {
      if (b == 0 || slots[size_t(b)] != slots[size_t(b - 1)]) starts.push_back(b);
      if (b + 1 == B || slots[size_t(b + 1)] != slots[size_t(b)]) out_row[size_t(b)] = runs++;
    }
    starts.push_back(B);
    // Called from a thread that runs a job of the lanes' pool, the pool's other threads are not
    // to be had (a run() from there goes serial, and lane 0 would wait at the first barrier for
    // a lane that runs only after it): the step then runs on one lane, with the same bits.
    // Otherwise the rows split into min(lanes, B) groups at t B / G, each cut moved to the
    // nearest start of a run past the last cut (a run's rows feed one cache in order, on one
    // lane; ties to the earlier start); cuts that meet are dropped, and the lanes they would
    // have started get no rows (below).
    const int G0 = pool.running_here() ? 1 : int(std::min<int64_t>(int64_t(lanes.size()), B));
    bounds.assign(1, 0);
    for (int t = 1; t < G0; ++t) {
      const int64_t x = int64_t(t) * B / G0;
      const auto hi = std::lower_bound(starts.begin(), starts.end(), x);  // starts ends with B
      int64_t cut = *hi;
      if (hi != starts.begin() && *(hi - 1) > bounds.back() && x - *(hi - 1) <= *hi - x)
        cut = *(hi - 1);
      if (cut > bounds.back() && cut < B) bounds.push_back(cut);
    }
    bounds.push_back(B);
    // Rows that are one run (a prompt's chunk read with nothing beside it): the other lanes
    // take no rows but their shares of each MoE layer's experts and of the head's panels, where
    // one lane alone would read every expert's weights once per MoeLayer::kFewTokens rows and
    // start the pool for each product.
    while (int(bounds.size()) - 1 < G0) bounds.push_back(B);
    const int G = int(bounds.size()) - 1;
    if (G == 1) {
      // One lane: the head's product splits its output rows over the default pool instead.
      step_one_lane(lanes[0], slots, ids, 0, B);
    } else {
      if (int64_t(ffn_in.size()) < B * c.hidden) ffn_in.resize(size_t(B * c.hidden));
      if (int64_t(head_in.size()) < runs * c.hidden) head_in.resize(size_t(runs * c.hidden));
      moe_step.size_rows(B, G);
      barrier.reset(G);
      for (LaneWork& w : expert_work) w.reset(G, moe_step.items());
      const int64_t head_panels = (int64_t(c.vocab) + PackedMatrix::kPanel - 1) / PackedMatrix::kPanel;
      head_work.reset(G, int((head_panels + kHeadPiece - 1) / kHeadPiece));
      first_error = nullptr;
      // Every row is computed as it is alone, so how the rows and the experts are split over
      // the lanes changes no bits.
      try {
        pool.run([&](int t) {
          if (t >= G) return;
          try {
            step_lane(t, G, slots, ids, B);
          } catch (...) {
            {
              std::lock_guard<std::mutex> lock(error_mu);
              if (!first_error) first_error = std::current_exception();
            }
            barrier.break_all();
            throw;
          }
        });
      } catch (...) {
        std::exception_ptr first = first_error;
        first_error = nullptr;
        if (first) std::rethrow_exception(first);
        throw;
      }
    }
    for (int s : slots) ++pos[size_t(s)];
    return {logits.data(), size_t(runs * c.vocab)};
  }
};

BatchDecoder::BatchDecoder(const Transformer& model, int slots, core::ThreadPool* pool)
    : impl_(std::make_unique<Impl>(model, slots, pool)) {}
BatchDecoder::~BatchDecoder() = default;

void BatchDecoder::set_lane_hook_for_testing(std::function<void(int lane)> hook) {
  impl_->lane_hook = std::move(hook);
}

void BatchDecoder::load_routing_state(const std::string& path) {
  core::SafetensorsFile file(path);
  const ModelConfig& c = impl_->c;
  for (int l = 0; l < c.layers; ++l) {
    MoeLayer& m = impl_->moe[size_t(l)];
    const std::string base = "layers." + std::to_string(l) + ".ffn.gate.";
    if (const core::StTensorInfo* t = file.find(base + "bias")) {
      if (t->dtype != core::StDtype::kF32 || t->numel() != int64_t(m.bias().size()))
        throw InputError(path, 0, "tensor '" + t->name + "': expected F32 [" +
                                      std::to_string(m.bias().size()) + "]");
      std::memcpy(m.bias().data(), file.bytes(*t).data(), m.bias().size() * sizeof(float));
    }
    if (const core::StTensorInfo* t = file.find(base + "tid2eid")) {
      const int64_t want = int64_t(c.vocab) * c.ffn.top_k;
      if (t->dtype != core::StDtype::kI32 || t->numel() != want)
        throw InputError(path, 0, "tensor '" + t->name + "': expected I32 [" +
                                      std::to_string(c.vocab) + ", " +
                                      std::to_string(c.ffn.top_k) + "]");
      m.tid2eid().resize(static_cast<size_t>(want));
      std::memcpy(m.tid2eid().data(), file.bytes(*t).data(), size_t(want) * sizeof(int32_t));
    }
    for (size_t t = 1; t < impl_->lanes.size(); ++t) {  // the other lanes' prefill layers
      MoeLayer& o = impl_->lanes[t].prefill_moe[size_t(l)];
      o.bias() = m.bias();
      o.tid2eid() = m.tid2eid();
    }
  }
}

BatchDecoder::PrefillCounts BatchDecoder::prefill_counts() const { return impl_->counts; }

int BatchDecoder::slots() const { return int(impl_->pos.size()); }
int BatchDecoder::vocab() const { return impl_->c.vocab; }

void BatchDecoder::reset(int slot) {
  for (AttentionCache& a : impl_->cache.at(size_t(slot))) a.clear();
  impl_->pos[size_t(slot)] = 0;
}

int64_t BatchDecoder::position(int slot) const { return impl_->pos.at(size_t(slot)); }

std::span<const float> BatchDecoder::prefill(int slot, std::span<const int32_t> ids) {
  if (ids.empty()) throw InputError::field("prompt", "generation needs at least one token");
  if (slot < 0 || slot >= slots()) throw InputError::field("slot", "out of range");
  check_ids(ids, impl_->c.vocab);
  if (impl_->pos[size_t(slot)] == 0 && ids.size() > 1) return impl_->prefill_batch(slot, ids);
  return impl_->prefill_rows(slot, ids);
}

std::span<const float> BatchDecoder::prefill_many(
    std::span<const int> slots, std::span<const std::span<const int32_t>> prompts) {
  if (slots.size() != prompts.size() || slots.empty())
    throw InputError::field("slots", "one prompt per slot, at least one slot");
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i] < 0 || slots[i] >= this->slots()) throw InputError::field("slot", "out of range");
    for (size_t j = 0; j < i; ++j)
      if (slots[j] == slots[i]) throw InputError::field("slot", "given twice");
    if (prompts[i].empty()) throw InputError::field("prompt", "generation needs at least one token");
    check_ids(prompts[i], impl_->c.vocab);
  }
  return impl_->prefill_many(slots, prompts);
}

std::span<const float> BatchDecoder::step(std::span<const int> slots,
                                          std::span<const int32_t> ids) {
  if (slots.size() != ids.size() || slots.empty())
    throw InputError::field("slots", "one token per slot, at least one slot");
  for (size_t b = 0; b < slots.size(); ++b) {
    if (slots[b] < 0 || slots[b] >= this->slots()) throw InputError::field("slot", "out of range");
    if (b > 0 && slots[b] != slots[b - 1])  // a run's rows must be consecutive
      for (size_t j = 0; j + 1 < b; ++j)
        if (slots[j] == slots[b])
          throw InputError::field("slots", "slot " + std::to_string(slots[b]) +
                                               " given in two runs (its rows must be consecutive)");
  }
  return impl_->step(slots, ids);
}

}  // namespace trex::model
