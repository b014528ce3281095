#include "trex/plan/predict.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "trex/plan/collectives.h"
#include "trex/plan/ep_dispatch.h"
#include "trex/plan/gemm_efficiency.h"
#include "trex/plan/in_flight.h"
#include "trex/plan/overlap.h"
#include "trex/plan/pipeline_layout.h"
#include "trex/plan/roofs.h"
#include "trex/plan/scale_losses.h"

namespace trex::plan {

double Prediction::mfu_of(model::FlopConvention c) const {
  for (const MfuFigure& f : mfu)
    if (f.convention == c) return f.mfu;
  return 0;
}

std::vector<std::string> model_assumptions() {
  return {
      "GEMM time = max(FLOPs / (peak x matmul efficiency), bytes / (HBM bandwidth x memory efficiency)); bytes = inputs, weights and outputs once",
      "attention core (flash-style) at peak x attention efficiency, or its bytes (sparse top-k keys gathered per query) if slower",
      "vector kernels (norms, activations, RoPE, mHC sums, permutes) memory-bound at HBM bandwidth x memory efficiency",
      "every kernel takes at least the launch cost (the fragmented tail); backward = 2x GEMM, 2.5x attention, 2x vector work",
      "TP with sequence parallelism: an all-gather and a reduce-scatter per block and direction, not overlapped unless tp_overlap",
      "EP all-to-all: dispatch and combine per MoE layer and direction, exposed except the stated a2a_overlap share or what moe_overlap hides (combined 1F1B: node by node; DualPipe: behind the other micro-batch's compute)",
      "CP ring exchange of K/V overlaps the attention core; only the excess is exposed",
      "PP: one activation send per stage boundary and direction per model chunk and micro-batch, exposed except, with pp_overlap under interleaving, the steady state's sends under their paired chunks; bubble (pp-1)/vpp micro-batch times (1F1B, interleaved)",
      "DP: gradient reduce-scatter (ZeRO>=1) or all-reduce overlaps the last micro-batch's backward, parameter all-gather the first forward",
      "optimizer: AdamW reads 16 B and writes 14 B per parameter of the local shard at memory bandwidth; the swap optimizer streams 12 B/param each way over the host link, double-buffered",
      "routing uniform unless moe_imbalance says otherwise; the gradient-norm all-reduce, the loss and data loading are not charged",
  };
}

namespace {

// Work of one block (or the head) for one micro-batch on one device, forward pass.
struct Work {
  double mm = 0, attn = 0, vec = 0;          // roofline seconds by class
  double mm_launch = 0, attn_launch = 0, vec_launch = 0;  // extra seconds from the launch floor
  double flops = 0;                          // executed FLOPs
  double saved = 0;                          // activation bytes kept for backward
  double attn_saved = 0;                     // the attention core's share of `saved`
  double core_saved = 0;                     // what recomputing the core alone frees (its inputs stay)
  double input_bytes = 0;                    // the block input (kept under full recomputation)
  double gemm_saved = 0;                     // the GEMM inputs within `saved` (FP8 storage halves them)
  // What recomputing the norms and activation functions frees (norm-act): each keeps its input
  // and drops its output, the next GEMM's saved input. For a norm and GELU those are as many
  // bytes as the input; SwiGLU's output is half its two inputs (dense_ffn).
  double cheap_saved = 0;
  double cheap_t = 0;                        // their kernels' forward seconds (norm-act recomputation)
  double upproj_t = 0;                       // MLA up-projection GEMMs (recomputed under norm-act)
  double moe_saved = 0;                      // the routed experts' share of `saved`
  double moe_t = 0;                          // their forward seconds (moe recomputation)
  double attn_flops = 0, moe_flops = 0, upproj_flops = 0;  // within `flops`
  double tp_s = 0;                           // TP collectives, forward
  double ep_s = 0;                           // EP all-to-all and ETP gather/scatter, forward
  double ep_dispatch_s = 0;                  // the dispatch side of ep_s (the rest is the combine)
  double cp_s = 0;                           // CP ring exchange of K/V, forward
  // Vector kernels whose backward is counted on its own, not as twice the forward (the unfused
  // softmax path): forward and backward seconds.
  double vec_once_fwd = 0, vec_once_bwd = 0;
  double fwd() const { return mm + attn + vec + vec_once_fwd; }
  double launch() const { return mm_launch + attn_launch + vec_launch; }
  double bwd() const { return 2 * mm + 2.5 * attn + 2 * vec + vec_once_bwd; }
  double bwd_launch() const { return 2 * mm_launch + 2 * attn_launch + 2 * vec_launch; }
  void add(const Work& o, double k = 1) {
    mm += k * o.mm; attn += k * o.attn; vec += k * o.vec;
    mm_launch += k * o.mm_launch; attn_launch += k * o.attn_launch; vec_launch += k * o.vec_launch;
    flops += k * o.flops; saved += k * o.saved; attn_saved += k * o.attn_saved; core_saved += k * o.core_saved; input_bytes += k * o.input_bytes;
    gemm_saved += k * o.gemm_saved; cheap_saved += k * o.cheap_saved; cheap_t += k * o.cheap_t;
    upproj_t += k * o.upproj_t; moe_saved += k * o.moe_saved; moe_t += k * o.moe_t;
    attn_flops += k * o.attn_flops; moe_flops += k * o.moe_flops; upproj_flops += k * o.upproj_flops;
    tp_s += k * o.tp_s; ep_s += k * o.ep_s; ep_dispatch_s += k * o.ep_dispatch_s; cp_s += k * o.cp_s;
    vec_once_fwd += k * o.vec_once_fwd; vec_once_bwd += k * o.vec_once_bwd;
  }
};

class Builder {
 public:
  Builder(const model::ModelConfig& m, const Cluster& c, const Run& r, const Strategy& s)
      : m_(m), c_(c), s_(s) {
    ta_ = double(r.micro_batch) * double(r.seq_len) / double(s.cp);
    tsp_ = (s.tp > 1 && s.sequence_parallel) ? ta_ / double(s.tp) : ta_;
    tp_ = double(s.tp);
    seq_ = r.seq_len;
    fp8_ = r.fp8_matmul;
    cast_bytes_ = r.fp8_cast_bytes;
    act_bytes_ = r.act_bytes;
    // The cluster states what kernels reach on the device; the stack scales it (stack.h).
    Roofs rf = roofs(c, s.stack);
    peak_mm_ = rf.matmul;
    peak_fp8_ = rf.fp8;
    peak_attn_ = rf.attention;
    simt_ = rf.simt;
    align_ = s.stack.tensor_core_align_bytes;
    bw_ = rf.memory;
    launch_s_ = rf.launch_s;
    // The shape curve's half dimension at each precision's per-core rate (gemm_efficiency.h).
    double cores = c.device.device.cores_matrix.value;
    double fp8_peak = c.device.peak.flops_fp8 ? c.device.peak.flops_fp8->value : 0;
    h_mm_ = gemm_half_dim_for(c.eff.gemm_half_dim, c.eff.gemm_half_dim_core_flops, cores > 0 ? c.peak_flops / cores : 0);
    h_fp8_ = gemm_half_dim_for(c.eff.gemm_half_dim, c.eff.gemm_half_dim_core_flops, cores > 0 ? fp8_peak / cores : 0);
    const double hk = c.eff.gemm_half_dim_k > 0 ? c.eff.gemm_half_dim_k : c.eff.gemm_half_dim;
    hk_mm_ = gemm_half_dim_for(hk, c.eff.gemm_half_dim_core_flops, cores > 0 ? c.peak_flops / cores : 0);
    hk_fp8_ = gemm_half_dim_for(hk, c.eff.gemm_half_dim_core_flops, cores > 0 ? fp8_peak / cores : 0);
  }

  double ta() const { return ta_; }
  double tsp() const { return tsp_; }

  // Time the launch floor adds when `time` is split evenly over `kernels` launches: a kernel
  // never takes less than the launch cost.
  double floor_extra(double time, double kernels) const {
    return kernels * std::max(0.0, launch_s_ - time / kernels);
  }

  // Seconds of the matrix units for `flops` of a GEMM whose rows, columns and inner dimension
  // are m, n, k: the shape curve of gemm_efficiency.h on top of the large-GEMM efficiency;
  // BF16 GEMMs (elem 2) of an FP8 run use the FP8 peak and FP8 efficiency.
  double mm_seconds(double flops, double m, double n, double k, double elem, double groups = 1) const {
    bool fp8 = fp8_ && elem == 2;
    // A misaligned 16-bit GEMM on a stack that states the rate (gemm_efficiency.h,
    // tensor_core_aligned); FP8 GEMMs are left out (their libraries refuse, or the frameworks
    // pad, unaligned shapes).
    if (!fp8 && elem == 2 && !(aligned(n) && aligned(k))) return flops / simt_;
    double shape = gemm_shape_factor(m, n, k, fp8 ? h_fp8_ : h_mm_, fp8 ? hk_fp8_ : hk_mm_) *
                   tile_wave_factor(m, n, k, c_.eff.gemm_tiles, c_.device.device.cores_matrix.value, groups);
    return flops / ((fp8 ? peak_fp8_ : peak_mm_) * shape);
  }

  // FP8 runs quantize each GEMM's input before the product (read bf16, write the FP8 copies:
  // Run::fp8_cast_bytes per element under the run's recipe). Weights are
  // quantized once per step and cached across micro-batches (Transformer Engine's
  // is_first_microbatch), so their cast is not charged per micro-batch.
  void fp8_cast(Work& w, double elems) {
    if (!fp8_) return;
    double time = cast_bytes_ * elems / bw_;
    w.vec += time;
    w.vec_launch += floor_extra(time, 1);
  }

  // A GEMM of t rows, k inputs, n outputs (elem bytes per element), `kernels` launches.
  void gemm(Work& w, double t, double k, double n, bool gathered_input = false, double elem = 2, double kernels = 1) {
    double flops = 2 * t * k * n;
    double bytes = elem * (t * k + k * n + t * n);
    double time = std::max(mm_seconds(flops, t, n, k, elem), bytes / bw_);
    w.mm += time;
    w.mm_launch += floor_extra(time, kernels);
    w.flops += flops;
    double kept = elem * t * k / (gathered_input && s_.sequence_parallel ? tp_ : 1);
    w.saved += kept;
    w.gemm_saved += kept;
    if (elem == 2) fp8_cast(w, t * k);
  }
  // A memory-bound kernel moving `bytes`; it keeps `saved` bytes for backward.
  void vec(Work& w, double bytes, double saved, double kernels = 1) {
    double time = bytes / bw_;
    w.vec += time;
    w.vec_launch += floor_extra(time, kernels);
    w.saved += saved;
  }
  // Unfused attention core (no FlashAttention): QK^T and PV as batched GEMMs over all s keys
  // (the causal mask is applied after the product), the s x s scores written, soft-maxed,
  // dropped out and read back: about 13 bytes per (query, head, key) forward.
  void unfused_attention(Work& w, double heads, double qk_dim, double v_dim, double head_bytes) {
    double keys = double(seq_);
    double flops = 2 * heads * (qk_dim + v_dim) * keys * ta_;
    // QK^T (inner dimension qk_dim) and PV (output width v_dim) as cuBLAS batched GEMMs: each at
    // the matmul rate, or at the stack's misaligned rate if its head dimension misses the multiple.
    auto rate = [&](double dim) { return aligned(dim) ? peak_mm_ : simt_; };
    double time = aligned(qk_dim) && aligned(v_dim)
                      ? flops / peak_mm_
                      : 2 * heads * keys * ta_ * (qk_dim / rate(qk_dim) + v_dim / rate(v_dim));
    w.mm += time;
    w.mm_launch += floor_extra(time, 2);
    w.flops += flops;
    double scores = ta_ * heads * keys;
    vec(w, scores * 12, scores * 5, 2);  // softmax + dropout; keeps softmax output and mask
    // QK^T's backward needs Q and K, PV's the probabilities and V: the core keeps no output. Its
    // output O (the last v_dim share of head_bytes) is the output projection's input, which that
    // GEMM keeps (review rplan5 MEDIUM 3: counted here too until session 19). Korthikanti et al.
    // 2022 (arXiv 2205.05198, section 4.1): Q, K 4sbh, V 2sbh, scores 5as^2b in the core.
    const double kept = head_bytes - 2 * ta_ * heads * v_dim;
    w.saved += kept;
    w.attn_saved += scores * 5 + kept;
    w.core_saved += scores * 5;
    if (!s_.fused_softmax) {
      // PyTorch's fallback (Megatron's FusedScaleMaskSoftmax.forward_torch_softmax, softmax in
      // fp32 as query-key layer scaling forces): bytes per score, forward: .float() 2+4, x scale
      // 4+4, masked_fill_ 4+4, softmax 4+4, back to 16 bits 4+2 = 36 against the fused kernel's
      // 2+2, so 32 more; backward through the same five: 2+4, 4+4+4, 4+4, 4+4, 4+2 = 40 against
      // the fused kernel's 2+2+2, 34 more. The softmax keeps its fp32 output (4 B, not 2).
      double fwd = scores * 32 / bw_;
      w.vec_once_fwd += fwd;
      w.vec_launch += floor_extra(fwd, 5);
      w.vec_once_bwd += scores * 34 / bw_;
      w.saved += scores * 2;
      w.attn_saved += scores * 2;
      w.core_saved += scores * 2;
    }
  }

  // The attention output a fused (flash) kernel keeps for its backward (FlashAttention-2's
  // backward reads Q, K, V, O and the log-sum-exp) is the very tensor the output projection
  // keeps as its input (a view of it, in Megatron and Transformer Engine): with BF16 storage it
  // is counted once, as the projection's input, so that selective recomputation, which drops
  // the attention's own share, still keeps it. Under FP8 storage the projection keeps an FP8
  // copy of its own and the kernel's BF16 output stays. Korthikanti et al. 2022 (arXiv
  // 2205.05198, section 4.1) count the projection's input, 2sbh, once beside Q, K and V.
  double shared_output(double output_bytes) const { return act_bytes_ >= 2 ? output_bytes : 0; }

  // `core`: what the kernel itself keeps beyond its inputs (the log-sum-exp), all that
  // recomputing the core frees.
  void attention(Work& w, double flops, double bytes, double saved, double core) {
    double time = std::max(flops / peak_attn_, bytes / bw_);
    w.attn += time;
    w.attn_launch += floor_extra(time, 1);
    w.flops += flops;
    w.attn_flops += flops;
    w.saved += saved;
    w.attn_saved += saved;
    w.core_saved += core;
  }

  // Residual-stream width in bytes per token: mHC keeps n fp32 streams, else one bf16 vector.
  double stream_bytes() const {
    return m_.mhc.streams > 1 ? 4.0 * m_.mhc.streams * m_.hidden : 2.0 * m_.hidden;
  }

  // mHC pre (Phi, Sinkhorn, weighted sum) or plain norm input; then post (mix and add).
  void residual_site(Work& w) {
    double d = m_.hidden, n = m_.mhc.streams;
    if (n > 1) {
      gemm(w, tsp_, n * d, (n + 2) * n, false, 4);
      vec(w, tsp_ * (4 * n * d + 2 * d), tsp_ * 4 * n * d, 2);   // Sinkhorn (fused) and y = sum pre_i X_i
      vec(w, tsp_ * (4 * n * d + 2 * d + 4 * n * d), tsp_ * 2 * d);  // X' = post F + C^T X
    } else {
      vec(w, tsp_ * 6 * d, 0);  // residual add
    }
  }

  // A norm keeps its BF16 input; its output is kept by the GEMM it feeds, in the run's activation
  // storage (act_bytes_, 1 B under FP8), and that is what norm-act recomputation frees. A norm
  // feeding no GEMM (`feeds_gemm` false) keeps its output in BF16. Until session 26 norm-act freed
  // 2 B an element under FP8 storage too, more than was counted.
  void norm(Work& w, double t, double width, bool feeds_gemm = true) {
    cheap(w, t * 4 * width, t * 2 * width);
    if (feeds_gemm) w.cheap_saved -= t * (2 - act_bytes_) * width;
  }

  // The norm before an attention or FFN block. With the stack's fp32_norm_input (stack.h) a cast
  // of the residual to FP32 and a norm reading it, in two kernels, keeping the BF16 input.
  void residual_norm(Work& w) {
    const double d = m_.hidden;
    if (s_.stack.fp32_norm_input && m_.mhc.streams <= 1) {
      cheap(w, tsp_ * 12 * d, tsp_ * 2 * d, 2);
      w.cheap_saved -= tsp_ * (2 - act_bytes_) * d;  // norm-act frees the GEMM's input (norm above)
    } else
      norm(w, tsp_, d);
  }

  // A norm or activation function: memory-bound, cheap to recompute (norm-act recomputation).
  void cheap(Work& w, double bytes, double saved, double kernels = 1) {
    double before = w.vec + w.vec_launch;
    vec(w, bytes, saved, kernels);
    w.cheap_t += w.vec + w.vec_launch - before;
    w.cheap_saved += saved;
  }

  // TP with sequence parallelism: an all-gather before the block and a reduce-scatter after
  // it; without sequence parallelism one all-reduce of the same volume. `share` < 1 for the
  // head, which only gathers.
  void tp_block(Work& w, double share = 1) {
    if (s_.tp <= 1) return;
    double bytes = ta_ * 2 * m_.hidden;
    w.tp_s += share * (s_.sequence_parallel ? 2 * all_gather_s(c_, s_.tp, s_.tp, bytes)
                                            : all_reduce_s(c_, s_.tp, s_.tp, bytes));
  }

  // Ring exchange of `bytes` of K/V per rank over CP: cp - 1 steps.
  void cp_ring(Work& w, double bytes) {
    if (s_.cp <= 1) return;
    w.cp_s += double(s_.cp - 1) * p2p_s(c_, s_.tp * s_.cp, bytes);
  }

  // Experts of one rank as one grouped GEMM (or one kernel per expert): every local expert's
  // weights are read once per micro-batch, so few rows per expert make it memory-bound.
  // The shape curve's m is all the rows of one grouped kernel, each expert's with one kernel per
  // expert (gemm_efficiency.h, grouped_gemm_curve_rows).
  void grouped_gemm(Work& w, double rows, double k, double n, double experts, double kernels) {
    double flops = 2 * rows * k * n;
    double bytes = 2 * (rows * k + experts * k * n + rows * n);
    double time = std::max(mm_seconds(flops, grouped_gemm_curve_rows(rows, experts, kernels), n, k, 2, experts), bytes / bw_);
    w.mm += time;
    w.mm_launch += floor_extra(time, kernels);
    w.flops += flops;
    w.saved += 2 * rows * k;
    w.gemm_saved += 2 * rows * k;
    fp8_cast(w, rows * k);
  }

  void attention_block(Work& w, int ratio) {
    const model::AttentionConfig& a = m_.attention;
    double d = m_.hidden, H = a.heads / tp_, hd = a.head_dim;
    residual_site(w);
    residual_norm(w);
    tp_block(w);
    double keys = model::mean_attended_keys(m_, ratio < 0 ? -1 : 0, seq_);
    if (ratio >= 0 && a.kind == model::AttentionKind::kV4) keys = keys_for_ratio(ratio);
    switch (a.kind) {
      case model::AttentionKind::kGqa: {
        double kv = std::max(1.0, a.kv_heads / tp_);
        gemm(w, ta_, d, (H + 2 * kv) * hd, true);
        vec(w, ta_ * (H + kv) * hd * 4, 0);  // RoPE on q and k
        double bytes = 2 * ta_ * (2 * H * hd + 2 * kv * hd);
        if (s_.flash_attention)
          attention(w, 4 * H * hd * keys * ta_, bytes, bytes - shared_output(2 * ta_ * H * hd) + 4 * ta_ * H, 4 * ta_ * H);
        else
          unfused_attention(w, H, hd, hd, bytes);
        gemm(w, ta_, H * hd, d);
        cp_ring(w, ta_ * 2 * kv * hd * 2);
        break;
      }
      case model::AttentionKind::kMla: {
        double qk = a.qk_nope_head_dim + a.qk_rope_head_dim, qlr = a.q_lora_rank, kvl = a.kv_lora_rank;
        if (qlr > 0) {
          gemm(w, ta_, d, qlr + kvl + a.qk_rope_head_dim, true);
          norm(w, ta_, qlr + kvl);
          gemm(w, ta_, qlr, H * qk);
        } else {
          gemm(w, ta_, d, H * qk + kvl + a.qk_rope_head_dim, true);
          norm(w, ta_, kvl);
        }
        {
          double mm0 = w.mm + w.mm_launch + w.vec + w.vec_launch, f0 = w.flops;
          gemm(w, ta_, kvl, H * (a.qk_nope_head_dim + a.v_head_dim));
          w.upproj_t += w.mm + w.mm_launch + w.vec + w.vec_launch - mm0;
          w.upproj_flops += w.flops - f0;
        }
        vec(w, ta_ * (H + 1) * a.qk_rope_head_dim * 4, 0);
        double bytes = 2 * ta_ * H * (2 * qk + 2 * a.v_head_dim);
        if (s_.flash_attention)
          attention(w, 2 * H * (qk + a.v_head_dim) * keys * ta_, bytes, bytes - shared_output(2 * ta_ * H * a.v_head_dim) + 4 * ta_ * H,
                    4 * ta_ * H);
        else
          unfused_attention(w, H, qk, a.v_head_dim, bytes);
        gemm(w, ta_, H * a.v_head_dim, d);
        cp_ring(w, ta_ * (kvl + a.qk_rope_head_dim) * 2);
        break;
      }
      case model::AttentionKind::kV4: {
        double qlr = a.q_lora_rank;
        // Low-rank query and the shared K=V head: the down projections are not split over TP.
        gemm(w, ta_, d, qlr + hd, true);
        norm(w, ta_, qlr + hd);
        gemm(w, ta_, qlr, H * hd);
        vec(w, ta_ * H * hd * 4, ta_ * H * hd * 2);          // per-head weight-free RMSNorm
        vec(w, ta_ * (H + 1) * a.rope_dims * 4, 0);          // RoPE on q and kv
        double kv_read = 2 * ta_ * a.window * hd / 64;       // window keys: a 64-query tile reuses them
        if (ratio > 0) {
          double cw = ratio == 4 ? 2 : 1;
          gemm(w, ta_, d, 2 * cw * hd);
          vec(w, ta_ * 2 * cw * hd * 4 * 2, ta_ * 2 * cw * hd * 4);  // softmax pooling with ape (fp32)
          norm(w, ta_ / ratio, hd, false);  // the compressed key, read by the attention core
        }
        if (ratio == 4) {
          double IH = m_.indexer.heads / tp_, Ihd = m_.indexer.head_dim;
          gemm(w, ta_, qlr, IH * Ihd);
          gemm(w, ta_, d, IH);
          gemm(w, ta_, d, 4 * Ihd);
          double visible = model::mean_visible_entries(4, seq_);
          attention(w, 2 * IH * (Ihd + 1) * visible * ta_, ta_ * (2 * IH * Ihd + 4 * visible), ta_ * 2 * IH * Ihd, 0);
          vec(w, ta_ * visible * 4, ta_ * 4 * m_.indexer.top_k);  // top-k over the scores
          kv_read += 2 * ta_ * std::min<double>(m_.indexer.top_k, visible) * hd;  // gathered per query
        }
        // HCA: each 64-query tile reads the compressed entries visible to it (on average half of them).
        if (ratio == 128) kv_read += 2 * hd * (ta_ / 64) * (ta_ / 256);
        double io = 2 * ta_ * 2 * H * hd;
        attention(w, 4 * H * hd * keys * ta_, io + kv_read, io + 4 * ta_ * H, 4 * ta_ * H);
        vec(w, ta_ * H * a.rope_dims * 4, 0);                // inverse RoPE on o
        // Grouped W_oa: G/tp groups of H hd/G inputs and olr outputs each, in one kernel; the
        // FLOPs and weight bytes equal one GEMM of H hd/tp inputs and olr outputs.
        double olr = a.o_lora_rank;
        gemm(w, ta_, H * hd, olr);
        gemm(w, ta_, a.o_groups * olr / tp_, d);
        cp_ring(w, ta_ * hd * 2);
        break;
      }
    }
  }

  double keys_for_ratio(int ratio) const {
    // mean_attended_keys looks the ratio up by layer; find a layer with this ratio.
    for (int i = 0; i < m_.layers; ++i)
      if (m_.compress_ratio(i) == ratio) return model::mean_attended_keys(m_, i, seq_);
    return model::mean_attended_keys(m_, -1, seq_);
  }

  void dense_ffn(Work& w, double width, double tp) {
    double d = m_.hidden, f = width / tp;
    bool swiglu = m_.ffn.activation == model::Activation::kSwiglu;
    gemm(w, ta_, d, (swiglu ? 2 : 1) * f, true);
    // Eager SwiGLU (stack.h eager_swiglu): silu and multiply apart, silu's output kept as well.
    const bool eager = swiglu && s_.stack.eager_swiglu;
    const double act_inputs = ta_ * f * (eager ? 6 : swiglu ? 4 : 2);
    cheap(w, ta_ * f * (eager ? 10 : swiglu ? 6 : 4), act_inputs, eager ? 2 : 1);
    down_projection(w, swiglu, [&](Work& into) { gemm(into, ta_, f, d); });
    // Recomputing the activation (norm-act; Megatron-Core's moe_act checkpoints the activation
    // function alone) keeps its inputs to rebuild its output, the down projection's input, f wide:
    // for GELU as many bytes as the input, for SwiGLU half of its two inputs, and nothing where
    // a fused SwiGLU backward never kept the product. Until session 26 norm-act freed SwiGLU's
    // two inputs instead, 2f B a token twice what it frees. The output is the down projection's
    // input, kept in the run's activation storage (act_bytes_ an element: 1 B under FP8).
    const bool product_kept = !(swiglu && s_.stack.fused_swiglu_backward);
    w.cheap_saved -= act_inputs - (product_kept ? ta_ * f * act_bytes_ : 0);
  }

  // The FFN's down projection, added by `add`. Under a stack whose fused SwiGLU backward rebuilds
  // the product (stack.h, fused_swiglu_backward) its input is not kept: its time and FLOPs stay,
  // the bytes it saved are taken back.
  template <typename AddGemm>
  void down_projection(Work& w, bool swiglu, AddGemm add) {
    const double saved = w.saved, gemm_saved = w.gemm_saved;
    add(w);
    if (swiglu && s_.stack.fused_swiglu_backward) {
      w.saved = saved;
      w.gemm_saved = gemm_saved;
    }
  }

  void ffn_block(Work& w, bool moe) {
    double d = m_.hidden;
    residual_site(w);
    residual_norm(w);
    if (!moe) {
      tp_block(w);
      dense_ffn(w, m_.ffn.hidden, tp_);
      return;
    }
    const model::FfnConfig& f = m_.ffn;
    double E = f.routed_experts, K = f.top_k;
    gemm(w, tsp_, d, E, false, 2, 1);
    vec(w, tsp_ * E * 12, tsp_ * E * 4, 2);                   // scores, top-k, weights
    vec(w, tsp_ * K * d * 4, 0);                               // permute
    double etp = double(s_.etp);
    double rows = tsp_ * K * etp * s_.moe_imbalance;           // rows processed here
    double local = E / double(s_.ep);
    double fe = f.expert_hidden / etp;
    double kernels = s_.grouped_gemm ? 1 : local;
    Work e;  // the routed experts, tallied apart for moe recomputation
    grouped_gemm(e, rows, d, 2 * fe, local, kernels);
    vec(e, rows * fe * 6, rows * fe * 4, kernels);
    down_projection(e, true, [&](Work& into) { grouped_gemm(into, rows, fe, d, local, kernels); });
    e.moe_saved = e.saved;
    e.moe_t = e.fwd() + e.launch();
    e.moe_flops = e.flops;
    w.add(e);
    vec(w, tsp_ * K * d * 4, 0);                               // unpermute and weighted sum
    // Dispatch and combine; with ETP, a gather before the experts and a scatter after.
    // FP8 dispatch where the stack quantizes before it (stack.h moe_fp8_dispatch); the combine BF16.
    double dispatch_elem = fp8_ && s_.stack.moe_fp8_dispatch ? 1 : 2;
    // A hierarchical dispatcher sends a token once per remote scale-up domain (ep_dispatch.h).
    double beyond = 1;
    const DispatcherRate* rate = nullptr;
    if (hierarchical(s_.moe_dispatcher) && !c_.links.empty()) {
      long domain = std::min<long>(s_.ep, std::max<long>(1, c_.links.front().group_size / s_.etp));
      beyond = dedup_scale_out_factor(s_.ep, domain, K, E);
      // Inside one scale-up domain a published measurement of the dispatcher, where the cluster
      // has one, replaces the link's bandwidth x efficiency (cluster.h, DispatcherRate).
      if (s_.ep > 1 && s_.ep * s_.etp <= c_.links.front().group_size)
        rate = c_.dispatch_rate(to_string(s_.moe_dispatcher), s_.ep);
    }
    double gather = s_.etp > 1 ? all_gather_s(c_, s_.etp, s_.etp, rows * d * 2) : 0;
    double dispatch = 0, combine = 0;
    if (rate != nullptr) {
      double received = tsp_ * ranks_per_token(s_.ep, K, E) * d;  // elements a rank receives
      // The measurement counts FP8's scales (one fp32 per 128 elements: DeepEP's and HybridEP's
      // tests, fp8_factor = (1 + 4/128) / 2 of BF16), so its bytes do here too.
      double measured_elem = dispatch_elem == 1 ? 1 + 4.0 / 128 : dispatch_elem;
      dispatch = received * measured_elem / (fp8_ ? rate->dispatch_fp8 : rate->dispatch_bf16);
      combine = received * 2 / rate->combine;
    } else {
      dispatch = all_to_all_s(c_, s_.ep, s_.etp, tsp_ * K * d * dispatch_elem, beyond);
      combine = all_to_all_s(c_, s_.ep, s_.etp, tsp_ * K * d * 2, beyond);
    }
    w.ep_dispatch_s += dispatch + gather;
    w.ep_s += dispatch + combine + 2 * gather;
    if (f.shared_experts > 0) {
      tp_block(w);
      dense_ffn(w, double(f.shared_experts) * f.expert_hidden, tp_);
    }
  }

  // Block for main layer i (or the MTP block for i < 0).
  Work block(int i) {
    Work w;
    w.input_bytes = tsp_ * stream_bytes();
    int ratio = i < 0 ? 0 : m_.compress_ratio(i);
    bool moe = i < 0 ? m_.is_moe() : m_.layer_is_moe(i);
    attention_block(w, m_.attention.kind == model::AttentionKind::kV4 ? ratio : -1);
    ffn_block(w, moe);
    return w;
  }

  Work embedding() {
    Work w;
    vec(w, tsp_ * 2 * m_.hidden * 2, 0);
    if (m_.mhc.streams > 1) vec(w, tsp_ * stream_bytes(), 0);
    return w;
  }

  // The output head and its loss. FP8 recipes keep the head in BF16 (DeepSeek-V3 section
  // 3.3.1; Transformer Engine's recipes likewise).
  Work head() {
    Work w;
    double d = m_.hidden, n = m_.mhc.streams;
    if (n > 1) {
      gemm(w, tsp_, n * d, n, false, 4);
      vec(w, tsp_ * (4 * n * d + 2 * d), tsp_ * 4 * n * d);
    }
    norm(w, tsp_, d);
    tp_block(w, 0.5);  // gather before the vocabulary-parallel head
    logits(w);
    return w;
  }

  // `count` MTP blocks: each a transformer block, its e_proj/h_proj and its own logits.
  Work mtp(long count) {
    Work w;
    for (long k = 0; k < count; ++k) {
      w.add(block(-1));
      gemm(w, ta_, 2 * m_.hidden, m_.hidden, true);  // e_proj and h_proj
      norm(w, tsp_, m_.hidden);
      logits(w);
    }
    return w;
  }

  void logits(Work& w) {
    bool fp8 = fp8_;
    fp8_ = false;
    // m_.vocab is the padded vocabulary where the stack pads it (stack.h, vocab_divisible_by:
    // Megatron-LM's 128 x TP, so the head meets the alignment there); a stack that does not pad
    // runs the stated size, aligned or not.
    gemm(w, ta_, m_.hidden, double(m_.vocab) / tp_, true);
    fp8_ = fp8;
    vec(w, ta_ * double(m_.vocab) / tp_ * 4 * 3, 0, 2);  // fp32 softmax cross-entropy (vocab-parallel)
  }

 private:
  const model::ModelConfig& m_;
  const Cluster& c_;
  const Strategy& s_;
  double ta_ = 0, tsp_ = 0, tp_ = 1;
  long seq_ = 0;
  double peak_mm_ = 0, peak_fp8_ = 0, peak_attn_ = 0, bw_ = 0, launch_s_ = 0;
  double simt_ = 0;              // FLOP/s charged to a misaligned 16-bit GEMM (Roofs::simt)
  double align_ = 0;             // the stack's tensor_core_align_bytes (0: every GEMM aligned)
  // Whether a 16-bit dimension of `elems` meets the stack's Tensor Core alignment.
  bool aligned(double elems) const { return tensor_core_aligned(elems, 2, align_); }
  double act_bytes_ = 2;         // storage of the saved GEMM inputs (Run::act_bytes)
  double cast_bytes_ = 4;        // HBM bytes per element of an FP8 input cast (the run's recipe)
  double h_mm_ = 0, h_fp8_ = 0;  // GEMM shape curve half dimensions (m, n), 16-bit and FP8
  double hk_mm_ = 0, hk_fp8_ = 0;  // and of the inner dimension k
  bool fp8_ = false;
};

// Parameters held by one device for the blocks of one pipeline rank.
struct ParamShare {
  double dense = 0;   // replicated over CP x DP (sharded over TP where split)
  double expert = 0;  // replicated over EDP
};

double tp_split_params(const model::ModelConfig& m, const model::LayerParams& p, double tp) {
  // Low-rank down projections, the shared K=V head, router and mHC are replicated over TP;
  // the rest is split. For V4/MLA the replicated part is small; for GQA everything splits.
  double replicated = p.router + p.mhc + p.norms;
  const model::AttentionConfig& a = m.attention;
  if (a.kind == model::AttentionKind::kV4) replicated += double(a.q_lora_rank) * m.hidden + double(a.head_dim) * m.hidden;
  if (a.kind == model::AttentionKind::kMla)
    replicated += double(a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim) * m.hidden;
  double total = p.total() - p.routed_experts;
  return replicated + (total - replicated) / tp;
}

// Share of a rank's layers that full recomputation covers (recompute_layers per chunk).
double full_recompute_share(const Strategy& s, long layers_here) {
  if (s.recompute_layers <= 0 || layers_here <= 0) return 1;
  return std::min(1.0, double(s.recompute_layers * s.vpp) / double(layers_here));
}

// Activation bytes one micro-batch leaves on a rank for its backward pass, under the
// strategy's recomputation and the run's activation storage precision.
double kept_activations(const Work& w, const Strategy& s, const Run& run, long layers_here) {
  double fp8_saving = w.gemm_saved * (1 - run.act_bytes / 2);  // FP8 storage of GEMM inputs
  double all = w.saved - fp8_saving;
  switch (s.recompute) {
    case Recompute::kNone: return all;
    // Selective (Megatron's checkpointed core attention; Korthikanti et al. 2022 section 5) and
    // the core in `moe` recompute the core from q, k, v, which stay as the checkpoint's inputs:
    // only what the core keeps beyond them goes (review rplan5 MEDIUM 4; until session 19 q, k
    // and v went too).
    case Recompute::kSelective: return all - w.core_saved;
    case Recompute::kNormAct: return all - w.cheap_saved - (w.upproj_t > 0 ? w.attn_saved : 0);
    case Recompute::kMoe: return all - w.core_saved - w.moe_saved * run.act_bytes / 2;
    case Recompute::kFull: {
      double frac = full_recompute_share(s, layers_here);
      return frac * w.input_bytes + (1 - frac) * all;
    }
  }
  return all;
}

// A MoE block's nodes under combined 1F1B (overlap.h): the routed experts apart from the rest
// of the block. The rest's windows include the TP collectives left on the compute stream and,
// backward, what selective recomputation replays before the gradients.
MoeLayerPhases moe_phases(const Work& blk, const Strategy& s) {
  MoeLayerPhases p;
  double tp = blk.tp_s * (1 - s.tp_overlap);
  double again = 0, again_expert = 0;
  switch (s.recompute) {
    case Recompute::kSelective: again = blk.attn + blk.attn_launch; break;
    case Recompute::kNormAct: again = blk.cheap_t + blk.upproj_t; break;
    case Recompute::kMoe: again = blk.attn + blk.attn_launch; again_expert = blk.moe_t; break;
    case Recompute::kNone: case Recompute::kFull: break;  // full: the replay is charged apart
  }
  p.expert_fwd = blk.moe_t;
  p.expert_bwd = 2 * blk.moe_t + again_expert;
  p.attn_fwd = blk.fwd() + blk.launch() - blk.moe_t + tp;
  p.attn_bwd = blk.bwd() + blk.bwd_launch() - 2 * blk.moe_t + again + tp;
  p.dispatch = blk.ep_dispatch_s;
  p.combine = blk.ep_s - blk.ep_dispatch_s;
  return p;
}

}  // namespace

Prediction predict(const model::ModelConfig& model_as_given, const Cluster& c, const Run& run, Strategy s) {
  complete_and_check(model_as_given, c, run, s);
  // The step runs on the vocabulary the stack pads to (stack.h, vocab_divisible_by); the MFU
  // conventions below count the model's own.
  model::ModelConfig padded;
  const long vocab = padded_vocab(model_as_given.vocab, s.stack.vocab_divisible_by, s.tp);
  if (vocab != model_as_given.vocab) {
    padded = model_as_given;
    padded.vocab = int(vocab);
  }
  const model::ModelConfig& m = vocab != model_as_given.vocab ? padded : model_as_given;
  Prediction pr;
  pr.strategy = s;
  pr.micro_batches = run.global_batch / (s.dp * run.micro_batch);
  pr.tokens_per_step = run.global_batch * run.seq_len;
  const long mb = pr.micro_batches;
  Builder b(m, c, run, s);

  // Distinct block kinds are computed once: (compress ratio, MoE or dense).
  std::map<std::pair<int, bool>, Work> cache;
  auto block = [&](int i) -> const Work& {
    std::pair<int, bool> key(m.compress_ratio(i), m.layer_is_moe(i));
    auto it = cache.find(key);
    if (it == cache.end()) it = cache.emplace(key, b.block(i)).first;
    return it->second;
  };

  // Layers, embedding, head and MTP to pipeline chunks (pipeline_layout.h); chunk k runs on
  // rank k mod pp.
  const long mtp_blocks = run.train_mtp ? m.mtp_depth : 0;
  const std::vector<PipelineChunk> chunks = pipeline_chunks(s.layout, m.layers, mtp_blocks, s.pp, s.vpp);

  const double tp = double(s.tp);
  long ns = s.tp * s.cp * s.dp;  // ranks per pipeline stage
  double stream = m.mhc.streams > 1 ? 2.0 * m.mhc.streams * m.hidden : 2.0 * m.hidden;  // bf16 on the wire
  double p2p_bytes = b.tsp() * stream;
  double p2p = p2p_s(c, ns + 1, p2p_bytes);
  // Without sequence parallelism the activation is replicated over TP; a stack that scatters it
  // (stack.h, pp_scatter_gather) sends 1/t per rank and all-gathers it inside the next stage.
  if (s.tp > 1 && !s.sequence_parallel && s.stack.pp_scatter_gather)
    p2p = p2p_s(c, ns + 1, p2p_bytes / tp) + all_gather_s(c, s.tp, s.tp, p2p_bytes);

  // ZeRO-3/FSDP sharding groups: the whole CP x DP group, or the HSDP shard group (experts
  // shard over the same share of EDP).
  const long dense_group = s.cp * s.dp, expert_group = s.edp;
  const long shard_dense = (s.zero >= 3 && s.shard_group > 0) ? s.shard_group : dense_group;
  const long shard_expert = (s.zero >= 3 && s.shard_group > 0) ? std::max<long>(1, expert_group * s.shard_group / dense_group) : expert_group;

  struct RankTime {
    double compute = 0, recompute = 0, launch = 0, tp = 0, cp = 0, ep = 0, pp = 0, zero3 = 0;
    double fwd = 0, bwd = 0;
    double total() const { return compute + launch + tp + cp + ep + pp + zero3; }
  };
  std::vector<RankTime> ranks(size_t(s.pp));
  std::vector<Work> rank_work(size_t(s.pp));
  std::vector<std::vector<Work>> chunk_work(size_t(s.pp), std::vector<Work>(size_t(s.vpp)));  // activations per chunk
  std::vector<ParamShare> share(size_t(s.pp));
  std::vector<long> rank_layers(size_t(s.pp), 0);
  std::vector<bool> rank_head(size_t(s.pp), false);
  std::vector<double> host_fwd(size_t(s.pp), 0), host_bwd(size_t(s.pp), 0);  // host-bound MoE excess
  const bool paired_a2a = s.moe_overlap == MoeOverlap::kOneFOneB;
  // Drop-and-pad: every expert's token count is its capacity, known on the host, so Megatron-
  // Core's dispatcher never waits for counts copied from the device (cuda_sync_point stays
  // "no_sync") and the host runs ahead of the GPU across layers: only a pass whose host work
  // exceeds the GPU work of the whole pass shows. Dropless and drop without padding wait inside
  // every MoE layer, so there each layer takes max(GPU, host) (stack.h moe_host_per_expert_s).
  const bool host_runs_ahead = s.moe_token_drop == MoeTokenDrop::kDropAndPad;

  // Steady-state share of micro-batches (1F1B warm-up and cool-down excluded): where a
  // schedule can pair one micro-batch's all-to-all with another's compute.
  const double steady = steady_share(mb, s.pp);

  for (long r = 0; r < s.pp; ++r) {
    Work w;
    ParamShare& ps = share[size_t(r)];
    // Combined 1F1B: each MoE layer's exchange against the nodes it is paired with (overlap.h).
    const double unpaired = unpaired_share(mb, s.pp, s.vpp, r, s.microbatch_group);
    double paired_exposed = 0, paired_comm = 0, paired_fwd = 0;
    for (long v = 0; v < s.vpp; ++v) {
      const PipelineChunk& ch = chunks[size_t(v * s.pp + r)];
      Work& cw = chunk_work[size_t(r)][size_t(v)];
      for (long i = ch.first; i < ch.first + ch.layers; ++i) {
        const Work& blk = block(int(i));
        w.add(blk);
        cw.add(blk);
        if (paired_a2a && blk.ep_s > 0) {
          MoeLayerPhases ph = moe_phases(blk, s);
          paired_exposed += exposed_a2a_paired(ph, unpaired, s.stack.comm_sm_fraction);
          paired_comm += ph.comm_fwd() + ph.comm_bwd();
          paired_fwd += blk.ep_s;
        }
        // Host-bound MoE layers: the layer takes max(GPU, host) per pass, the host time
        // growing with the local experts (stack.h, moe_host_per_expert_s).
        if (m.layer_is_moe(int(i)) && s.stack.moe_host_per_expert_s > 0) {
          double host = s.stack.moe_host_per_expert_s * double(m.ffn.routed_experts) / double(s.ep);
          if (host_runs_ahead) {
            host_fwd[size_t(r)] += host;
            host_bwd[size_t(r)] += host;
          } else {
            host_fwd[size_t(r)] += std::max(0.0, host - (blk.fwd() + blk.launch()));
            host_bwd[size_t(r)] += std::max(0.0, host - (blk.bwd() + blk.bwd_launch()));
          }
        }
        // Without CUDA graphs over attention, router and EP preprocessing, their host work is
        // exposed on top (the published gain of capturing them, stack.h moe_host_eager_s),
        // half in each direction; under drop-and-pad it joins the host time that runs ahead.
        if (m.layer_is_moe(int(i)) && !s.moe_cuda_graphs && s.stack.moe_host_eager_s > 0) {
          host_fwd[size_t(r)] += 0.5 * s.stack.moe_host_eager_s;
          host_bwd[size_t(r)] += 0.5 * s.stack.moe_host_eager_s;
        }
        // The plain all-to-all dispatcher's own eager host work (global permute, the counts'
        // sync) on top, which DeepEP's fused dispatch does not have (stack.h moe_host_alltoall_s).
        if (m.layer_is_moe(int(i)) && !s.moe_cuda_graphs && s.moe_dispatcher == MoeDispatcher::kAllToAll &&
            s.stack.moe_host_alltoall_s > 0) {
          host_fwd[size_t(r)] += 0.5 * s.stack.moe_host_alltoall_s;
          host_bwd[size_t(r)] += 0.5 * s.stack.moe_host_alltoall_s;
        }
        model::LayerParams p = model::layer_params(m, int(i));
        ps.dense += tp_split_params(m, p, tp);
        ps.expert += p.routed_experts / double(s.ep * s.etp);
      }
      rank_layers[size_t(r)] += ch.layers;
      if (ch.embedding) {
        w.add(b.embedding());
        cw.add(b.embedding());
        ps.dense += double(m.vocab) * m.hidden / tp;
      }
      if (ch.head) {
        w.add(b.head());
        cw.add(b.head());
        rank_head[size_t(r)] = true;
        if (!m.tie_embeddings || s.pp > 1) ps.dense += double(m.vocab) * m.hidden / tp;
      }
      if (ch.mtp > 0) {
        w.add(b.mtp(ch.mtp));
        cw.add(b.mtp(ch.mtp));
        model::LayerParams p = model::layer_params(m, 0, true);
        ps.dense += double(ch.mtp) * (tp_split_params(m, p, tp) + 2.0 * m.hidden * m.hidden / tp);
        ps.expert += double(ch.mtp) * p.routed_experts / double(s.ep * s.etp);
      }
    }
    rank_work[size_t(r)] = w;
    if (host_runs_ahead) {  // the rank's host time a micro-batch against its GPU time
      host_fwd[size_t(r)] = std::max(0.0, host_fwd[size_t(r)] - (w.fwd() + w.launch()));
      host_bwd[size_t(r)] = std::max(0.0, host_bwd[size_t(r)] - (w.bwd() + w.bwd_launch()));
    }

    RankTime& t = ranks[size_t(r)];
    double recompute = 0;
    double comm_repeat = 1;  // forward collectives run again under full recomputation
    switch (s.recompute) {
      case Recompute::kNone: break;
      case Recompute::kSelective: recompute = w.attn + w.attn_launch; break;
      case Recompute::kNormAct: recompute = w.cheap_t + w.upproj_t; break;
      case Recompute::kMoe: recompute = w.attn + w.attn_launch + w.moe_t; break;
      case Recompute::kFull: {
        double frac = full_recompute_share(s, rank_layers[size_t(r)]);
        recompute = frac * (w.fwd() + w.launch());
        comm_repeat = 1 + frac;
        break;
      }
    }
    t.fwd = w.fwd() + w.launch();
    t.bwd = w.bwd() + w.bwd_launch() + recompute;
    t.compute = w.fwd() + w.bwd() + recompute;
    t.recompute = recompute;
    // The host-bound excess of MoE layers counts with the launch floor (both are the GPU
    // waiting for the host); forward passes run again under full recomputation.
    t.launch = w.launch() + w.bwd_launch() + host_fwd[size_t(r)] * comm_repeat + host_bwd[size_t(r)];
    t.fwd += host_fwd[size_t(r)];
    t.bwd += host_bwd[size_t(r)] + (comm_repeat - 1) * host_fwd[size_t(r)];
    // Collectives run forward and backward (and forward again under full recomputation).
    t.tp = w.tp_s * (1 + comm_repeat) * (1 - s.tp_overlap);
    // EP all-to-all: a schedule with A2A overlap hides it behind another micro-batch's compute
    // in the steady state; the SM-driven comm kernels slow that compute by comm_sm_fraction.
    if (paired_a2a) {
      // Combined 1F1B pairs node by node; MoE blocks outside the layers (MTP) hide the same
      // share, and the forward exchange that full recomputation replays is exposed.
      double share_exposed = paired_comm > 0 ? paired_exposed / paired_comm : 1;
      t.ep = paired_exposed + share_exposed * 2 * (w.ep_s - paired_fwd) + (comm_repeat - 1) * w.ep_s;
    } else {
      t.ep = exposed_a2a(w.ep_s * (1 + comm_repeat), t.fwd + t.bwd, steady, s.moe_overlap, s.a2a_overlap,
                         s.stack.comm_sm_fraction);
    }
    // CP: the ring hides behind the attention core where it fits (backward moves K/V and their gradients).
    t.cp = std::max(0.0, w.cp_s - w.attn) + std::max(0.0, 2 * w.cp_s - 2.5 * w.attn);
    // PP: one send each way per model chunk; interleaved schedules with pp_overlap hide the
    // steady state's sends under the paired chunks' compute (overlap.h, exposed_pp).
    if (s.pp > 1)
      t.pp = exposed_pp(p2p, s.vpp, t.fwd / double(s.vpp), t.bwd / double(s.vpp),
                        interleaved_warmup_share(mb, s.pp, s.vpp, r, s.microbatch_group), s.pp_overlap);
    // ZeRO-3/FSDP: every micro-batch gathers the rank's weights for the forward and again for
    // the backward, and reduce-scatters its gradients, over the shard group. With prefetch the
    // next layer's gather runs under this layer's compute: only the excess and the first
    // layer's gather are exposed; without it every gather waits.
    if (s.zero >= 3) {
      // The weights travel at run.param_gather_bytes (1 where an FP8 run gathers FP8 shards).
      double gather = all_gather_s(c, shard_dense, s.tp * shard_dense, ps.dense * run.param_gather_bytes) +
                      all_gather_s(c, shard_expert, s.tp * shard_dense, ps.expert * run.param_gather_bytes);
      double scatter = all_gather_s(c, shard_dense, s.tp * shard_dense, ps.dense * run.grad_reduce_bytes) +
                       all_gather_s(c, shard_expert, s.tp * shard_dense, ps.expert * run.grad_reduce_bytes);
      t.zero3 = exposed_zero3(2 * gather + scatter, t.compute, gather, double(rank_layers[size_t(r)]), s.zero3_prefetch);
    }
  }

  // The slowest pipeline rank sets the pace.
  size_t slow = 0;
  for (size_t r = 1; r < ranks.size(); ++r)
    if (ranks[r].total() > ranks[slow].total()) slow = r;
  const RankTime& t = ranks[slow];
  double t_mb = t.total();
  pr.rank_layers = rank_layers;
  TimeBreakdown& tb = pr.time;
  tb.compute = double(mb) * t.compute;
  tb.recompute = double(mb) * t.recompute;
  tb.launch = double(mb) * t.launch;
  tb.tp_comm = double(mb) * t.tp;
  tb.cp_comm = double(mb) * t.cp;
  tb.ep_comm = double(mb) * t.ep;
  tb.pp_comm = double(mb) * t.pp;
  tb.dp_comm = double(mb) * t.zero3;
  // 1F1B: (pp-1)/vpp micro-batch times; DualPipe pairs both pipeline ends: about (pp/2 - 1).
  tb.bubble = s.moe_overlap == MoeOverlap::kDualPipe ? std::max(0.0, double(s.pp) / 2 - 1) * t_mb
                                                     : double(s.pp - 1) / double(s.vpp) * t_mb;

  // Data parallelism and the optimizer, on the rank with the most parameters.
  size_t big = 0;
  for (size_t r = 1; r < share.size(); ++r)
    if (share[r].dense + share[r].expert > share[big].dense + share[big].expert) big = r;
  const ParamShare& ps = share[big];
  double dp_time = 0;
  if (s.zero >= 3) {
    // Gradients were reduce-scattered per micro-batch (above). HSDP: the shards are then
    // all-reduced across the replicas of the shard group once per step.
    if (s.shard_group > 0 && s.shard_group < dense_group) {
      long replicas = dense_group / s.shard_group;
      dp_time = all_reduce_s(c, replicas, ns, ps.dense * run.grad_reduce_bytes / double(shard_dense)) +
                all_reduce_s(c, std::max<long>(1, expert_group / shard_expert), ns, ps.expert * run.grad_reduce_bytes / double(shard_expert));
      tb.dp_comm += s.dp_overlap ? std::max(0.0, dp_time - ranks[big].bwd) : dp_time;
    }
  } else if (s.zero >= 1) {
    if (s.grad_allreduce) {  // the whole gradient all-reduced, then the shard updated (strategy.h)
      dp_time += all_reduce_s(c, dense_group, ns, ps.dense * run.grad_reduce_bytes);
      dp_time += all_reduce_s(c, expert_group, ns, ps.expert * run.grad_reduce_bytes);
    } else {
      dp_time += all_gather_s(c, dense_group, ns, ps.dense * run.grad_reduce_bytes);       // reduce-scatter
      dp_time += all_gather_s(c, expert_group, ns, ps.expert * run.grad_reduce_bytes);
    }
    double gather = (s.param_broadcasts > 0
                         ? broadcasts_s(c, dense_group, ns, ps.dense * 2, std::min(s.param_broadcasts, dense_group))
                         : all_gather_s(c, dense_group, ns, ps.dense * 2)) +
                    all_gather_s(c, expert_group, ns, ps.expert * 2);
    // The reduction hides behind the last backward with dp_overlap; the weight gather behind
    // the first forward only if the stack also runs it there (param_gather_overlap).
    // ZeRO-2 keeps only its shard of the gradients through the step, so it cannot wait for the
    // last micro-batch: every backward reduce-scatters what it produced and each rank adds the
    // result to its shard (DeepSpeed: "for zero stage 2 (and 3), gradient reduction is required
    // after every backward because of gradient partitioning", deepspeedai/DeepSpeed issue 2252;
    // engine.py "ZeRO stage >= 2 communicates during non gradient accumulation boundaries as
    // well"). m reductions a step, each under its own micro-batch's backward with dp_overlap.
    // A run that accumulates whole gradients and reduces once is zero = 1.
    const double reductions = s.zero == 2 ? double(mb) : 1.0;
    tb.dp_comm = reductions * (s.dp_overlap ? std::max(0.0, dp_time - ranks[big].bwd) : dp_time) +
                 (s.dp_overlap && s.param_gather_overlap ? std::max(0.0, gather - ranks[big].fwd) : gather);
  } else {
    dp_time += all_reduce_s(c, dense_group, ns, ps.dense * run.grad_reduce_bytes);
    dp_time += all_reduce_s(c, expert_group, ns, ps.expert * run.grad_reduce_bytes);
    tb.dp_comm = s.dp_overlap ? std::max(0.0, dp_time - ranks[big].bwd) : dp_time;
  }
  // Tied input and output embeddings under a pipeline: the first stage holds the embedding and
  // the last its copy as the output head, so after the backward each (TP, CP, DP) pair of them
  // all-reduces the embedding's gradient before the optimizer step (Megatron-LM's
  // _allreduce_word_embedding_grads in megatron/core/distributed/finalize_model_grads.py, since
  // 2021 in train_step; DeepSpeed's pipeline engine _exec_reduce_tied_grads). Synchronous,
  // exposed. Two ranks (pp - 1) x ns apart: a ring all-reduce over two moves half of the
  // gradient each way twice, the time of one send of all of it plus a second latency. Its
  // element size is the run's tied_grad_reduce_bytes (DeepSpeed's bf16 engine sends fp32 here).
  if (m.tie_embeddings && s.pp > 1) {
    const long apart = (s.pp - 1) * ns + 1;
    double bytes = double(m.vocab) * m.hidden / tp * run.tied_grad_reduce_bytes;
    tb.dp_comm += p2p_s(c, apart, bytes) + c.level_for_extent(apart).latency_s;
  }
  double shard = ps.dense / (s.zero >= 1 ? double(shard_dense) : 1.0) + ps.expert / (s.zero >= 1 ? double(shard_expert) : 1.0);
  double adam = shard * 30 / (c.hbm_bw * c.eff.memory);
  if (s.swap_optimizer) {
    double state = shard * 12;
    double chunk = std::min(s.swap_chunk_bytes, state);
    double n = std::ceil(state / chunk);
    double a = chunk / c.host_link_bw, w = a, cu = adam / n;
    pr.swap_serial_s = n * (a + cu + w);
    pr.swap_overlapped_s = s.swap_slots >= 3 ? a + n * std::max({a, cu, w}) + w : a + n * std::max(cu, w + a) + w;
    tb.optimizer = pr.swap_overlapped_s;
  } else {
    tb.optimizer = adam;
  }
  double base = tb.compute + tb.launch + tb.tp_comm + tb.cp_comm + tb.ep_comm + tb.pp_comm + tb.bubble + tb.dp_comm +
                tb.optimizer;
  // Scale-dependent losses (scale_losses.h) and the stack's per-step work the model does not list.
  tb.straggler = base * straggler_loss(c, s.stack, c.devices());
  tb.overhead = base * s.stack.step_overhead;
  tb.step = base + tb.straggler + tb.overhead;
  pr.tokens_per_s = double(pr.tokens_per_step) / tb.step;

  // Memory on every pipeline rank; report the fullest.
  double best_total = -1;
  for (long r = 0; r < s.pp; ++r) {
    const Work& w = rank_work[size_t(r)];
    const ParamShare& p = share[size_t(r)];
    MemoryBreakdown mem;
    mem.pipeline_rank = int(r);
    double dense_w = p.dense / (s.zero >= 3 ? double(shard_dense) : 1.0);
    double expert_w = p.expert / (s.zero >= 3 ? double(shard_expert) : 1.0);
    // DualPipe keeps two copies of the parameters (arXiv 2412.19437 section 3.2.1).
    mem.weights = 2 * (dense_w + expert_w) * (s.moe_overlap == MoeOverlap::kDualPipe ? 2 : 1);
    mem.gradients = run.grad_bytes * (p.dense / (s.zero >= 2 ? double(shard_dense) : 1.0) +
                                      p.expert / (s.zero >= 2 ? double(shard_expert) : 1.0));
    double sh = p.dense / (s.zero >= 1 ? double(shard_dense) : 1.0) + p.expert / (s.zero >= 1 ? double(shard_expert) : 1.0);
    if (s.swap_optimizer) {
      mem.optimizer = double(s.swap_slots) * std::min(s.swap_chunk_bytes, sh * 12);
      mem.host_state = sh * 12;
      mem.host_fits = mem.host_state <= c.host_bytes_per_device;
    } else {
      mem.optimizer = 12 * sh;
    }
    // Micro-batches (chunks, interleaved) in flight at the rank's peak: Megatron-Core's 1F1B
    // warm-up + 1 (in_flight.h), each chunk with its own layers.
    long layers_here = rank_layers[size_t(r)];
    if (s.vpp > 1) {
      std::vector<double> per_chunk;
      for (const Work& cw : chunk_work[size_t(r)]) per_chunk.push_back(kept_activations(cw, s, run, layers_here));
      mem.activations = peak_in_flight_bytes(mb, s.pp, r, per_chunk, s.microbatch_group);
    } else {
      mem.activations = kept_activations(w, s, run, layers_here) * double(std::min<long>(mb, s.pp - r));
    }
    if (s.recompute == Recompute::kFull && layers_here > 0) mem.activations += w.saved / double(layers_here);
    // Logits and their gradient where the head is (one buffer for both when the cross-entropy
    // writes the gradient in place); chunked cross-entropy keeps one chunk.
    if (rank_head[size_t(r)])
      mem.logits = b.ta() * double(m.vocab) / tp * run.logits_bytes * (run.logits_grad_in_place ? 1 : 2) /
                   double(run.logits_chunks);
    mem.comm_buffers = b.ta() * 2 * m.hidden * (s.tp > 1 ? 1 : 0);
    if (m.is_moe()) mem.comm_buffers += 2 * b.tsp() * m.ffn.top_k * m.hidden * 2 * double(s.etp);
    mem.reserved = c.reserved_bytes;
    mem.capacity = c.hbm_bytes;
    mem.fits = mem.total() <= mem.capacity && mem.host_fits;
    if (mem.total() > best_total) {
      best_total = mem.total();
      pr.memory = mem;
    }
  }

  // Executed FLOPs per token (forward + backward + recomputation), for reference.
  double flops_mb = 0;
  for (long r = 0; r < s.pp; ++r) {
    const Work& w = rank_work[size_t(r)];
    double again = 0;
    switch (s.recompute) {
      case Recompute::kNone: break;
      case Recompute::kSelective: again = w.attn_flops; break;
      case Recompute::kNormAct: again = w.upproj_flops; break;
      case Recompute::kMoe: again = w.attn_flops + w.moe_flops; break;
      case Recompute::kFull: again = full_recompute_share(s, rank_layers[size_t(r)]) * w.flops; break;
    }
    flops_mb += 3 * w.flops + again;
  }
  pr.hardware_flops_per_token = flops_mb * double(ns) / (double(run.micro_batch) * run.seq_len * s.dp);

  double denom = tb.step * double(c.devices()) * c.peak_flops;
  for (model::FlopConvention conv : model::all_conventions()) {
    MfuFigure f;
    f.convention = conv;
    f.flops_per_token = model::training_flops_per_token(model_as_given, run.seq_len, conv, run.train_mtp);
    f.mfu = f.flops_per_token * double(pr.tokens_per_step) / denom;
    pr.mfu.push_back(f);
  }
  return pr;
}

}  // namespace trex::plan
