// A software-stack profile: what one training framework (Megatron-LM, Megatron-Core,
// DeepSpeed, MegaScale, torchtitan, MindSpeed...) does with the same hardware. One TOML file
// under configs/plan/stack/ (format in docs/plan.md), each figure with its source.
//
// The cluster file states what kernels reach on the device (fractions of the roofs); the stack
// scales them (its kernels, fusions and compiler) and supplies the defaults a strategy does not
// state: which share of TP traffic its schedule hides, whether ZeRO-3 gathers are prefetched,
// how its MoE schedule overlaps the all-to-all, how many SMs its communication kernels take,
// the per-step work the model does not list (data loading, logging, gradient clipping), and
// how well it mitigates stragglers.
#pragma once

#include <string>

namespace trex::plan {

// How the schedule overlaps the EP all-to-all with computation (docs/plan.md, "Overlap rules"; overlap.h).
enum class MoeOverlap {
  kNone,      // exposed, except the strategy's stated a2a_overlap share
  kOneFOneB,  // combined 1F1B: each all-to-all runs under one compute node of another micro-batch
  kDualPipe,  // DualPipe: forward and backward chunks paired from both pipeline ends
};
const char* to_string(MoeOverlap o);
MoeOverlap parse_moe_overlap(const std::string& s, const std::string& field);

// How the EP dispatcher moves a token to its top-k experts (docs/plan.md, "EP dispatchers").
enum class MoeDispatcher {
  kAllToAll,  // one copy per (token, expert) pair on every link (NCCL all-to-all)
  kDeepEp,    // hierarchical: one copy per remote scale-up domain over the scale-out network,
              // forwarded inside it over NVLink (DeepEP normal kernels, DeepSeek-V3's)
  kHybridEp,  // NVIDIA's HybridEP (DeepEP's hybrid-ep branch): hierarchical as kDeepEp, with
              // its own measured rates inside the scale-up domain (cluster [[ep_dispatcher]])
};
// Whether the dispatcher sends a token once per destination rank or domain (DeepEP, HybridEP)
// rather than once per (token, expert) pair (the plain all-to-all).
inline bool hierarchical(MoeDispatcher d) { return d != MoeDispatcher::kAllToAll; }
const char* to_string(MoeDispatcher d);
MoeDispatcher parse_moe_dispatcher(const std::string& s, const std::string& field);

struct StackProfile {
  std::string name = "neutral";
  std::string file;
  std::string source = "no stack profile: the cluster's factors unchanged";
  double matmul_scale = 1;       // x the cluster's matmul efficiency (BF16 and FP8)
  double attention_scale = 1;    // x the cluster's attention efficiency
  double memory_scale = 1;       // x the cluster's memory-bound efficiency
  double launch_scale = 1;       // x the per-kernel launch floor (CUDA graphs, fusion: < 1)
  double tp_overlap = 0;         // default share of TP collectives hidden
  bool dp_overlap = true;        // default: gradient reduction overlapped with the last backward
  // Sharded optimizer (ZeRO-1/2, distributed optimizer): whether the all-gather of the updated
  // bf16 weights after the optimizer step runs under the next step's first forward. DeepSpeed's
  // stage 1/2 gathers inside step() before it returns (stage_1_and_2.py, all_gather_dp_groups,
  // "ready for next round forward"), InternEvo broadcasts every shard after the step and waits
  // (hybrid_zero_optim.py broadcast_params(overlap=False), "TODO: support broadcast overlap"):
  // false, the gather is exposed even when the gradient reduction overlaps the backward.
  bool param_gather_overlap = true;
  bool zero3_prefetch = true;    // default: ZeRO-3/FSDP gathers prefetched behind compute
  bool pp_overlap = false;       // default: interleaved 1F1B's P2P sends under other chunks' compute
  // Megatron-LM's scatter/gather of pipeline sends (arXiv 2104.04473 section 4.1; on by default,
  // --no-scatter-gather-tensors-in-pipeline): without sequence parallelism each TP rank sends 1/t
  // of the replicated activation and the receiving stage all-gathers it over the TP group.
  bool pp_scatter_gather = false;
  // Whether the stack splits norms, dropout and residuals over the TP ranks (sequence
  // parallelism, arXiv 2205.05198, May 2022): the default of a strategy that does not state it.
  // Stacks older than it (Megatron-DeepSpeed of MT-NLG, BLOOM and BigScience's 2022 benchmarks)
  // replicate that work and its activations on every TP rank: false.
  bool sequence_parallel = true;
  MoeOverlap moe_overlap = MoeOverlap::kNone;  // default MoE schedule
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;  // default EP dispatcher
  double comm_sm_fraction = 0;   // share of compute lost while SM-driven comm kernels run (DeepEP)
  // Whether an FP8 run sends the EP dispatch in FP8 (1 B an element; the combine stays BF16).
  // DeepSeek-V3 quantizes the activations before the MoE up-projections and dispatches them in
  // FP8 (arXiv 2412.19437 section 3.3.4); Megatron-Core's dispatchers send the layer's BF16
  // hidden states whatever the GEMM precision (core_v0.16.0 fused_a2a.py: "HybridEP dispatcher
  // does not support fp8 dispatch now"; FP8 on the wire came only with the ncclep backend's
  // opt-in moe_dispatch_fwd_dtype = "mxfp8", default "bf16", in August 2026). false: BF16, the
  // default of a stack that states nothing.
  bool moe_fp8_dispatch = false;
  double step_overhead = 0;      // per-step work not modelled, as a fraction of the step
  // Host (CPU) seconds to issue one local expert's kernels in one MoE layer pass (forward,
  // backward or recomputation) when the layer is not captured in a CUDA graph: Transformer
  // Engine's GroupedLinear splits, quantizes and multiplies expert by expert, so the host work
  // grows with the experts per rank. A dropless token dispatcher needs the per-expert token
  // counts on the host (a device-to-host sync), so the GPU cannot run ahead of the host across
  // the layer: the layer takes max(GPU time, local experts x this). 0: off.
  double moe_host_per_expert_s = 0;
  // Host seconds a MoE layer exposes per micro-batch (forward and backward together) when its
  // attention, router and EP preprocessing run eagerly, without CUDA graphs (a run's
  // `cuda_graphs = "none"`): the dropless dispatcher's device-to-host sync keeps the host from
  // running ahead, so this host work adds to the layer's time even when the GPU is busier than
  // the host. The additive form is an assumption, not published: the source (stack files cite
  // it) gives only the end-to-end gain of capturing those parts, which is consistent with the
  // host time being added but does not show that it is added rather than max'ed with the GPU's
  // at other shapes. 0: off.
  double moe_host_eager_s = 0;
  // Host seconds a MoE layer exposes per micro-batch (forward and backward together) on top of
  // moe_host_eager_s when it also runs the plain all-to-all token dispatcher (strategy
  // moe_dispatcher = "alltoall") eagerly (cuda_graphs = "none"): that dispatcher's router and
  // preprocessing host work (the explicit global permute, the token counts' device-to-host
  // sync) which DeepEP's fused dispatch removes. Additive for the same reason, and the same
  // assumption, as moe_host_eager_s (the source publishes one end-to-end gain). 0: off.
  double moe_host_alltoall_s = 0;
  double straggler_scale = 1;    // x the cluster's straggler spread (mitigation: < 1)
  // Vocabulary padding: Megatron-LM pads the embedding and output layer to a multiple of
  // make_vocab_size_divisible_by (default 128) x TP (NVIDIA/Megatron-LM
  // megatron/training/tokenizer/tokenizer.py, _vocab_size_with_padding), so GPT-2's 50257 runs
  // as 51200 at TP 8. The model file states the tokenizer's vocabulary; the step is computed on
  // the padded one (the MFU conventions count the model's own). 0: no padding; at most
  // kMaxVocabDivisibleBy (Megatron's default is 128; a larger value is a typo, and the padded
  // vocabulary must stay an int).
  long vocab_divisible_by = 0;
  // An effective rate, not a mechanism: on the stack this profile describes, a 16-bit GEMM whose
  // inner (k) or output (n) dimension is not a multiple of this many bytes ran at about the
  // device's non-tensor FP32 peak x matmul (gemm_efficiency.h, tensor_core_aligned; the profile
  // states where it was observed in tensor_core_align_source). 0: every GEMM at the matmul rate.
  double tensor_core_align_bytes = 0;
  std::string tensor_core_align_source;
  // Whether the stack runs a SwiGLU MLP as one autograd function whose backward kernel rebuilds
  // silu(x1) * x2 (x1 = x W1, x2 = x W3), the down projection's input, from the two gate outputs
  // it keeps, so that product is not kept for the backward (one FFN-wide tensor a layer fewer
  // than a separate down projection that saves its own input). Meta's xformers ships it:
  // _SwiGLUFusedFunc saves x, x1 and x2 only, and silu_bw_fused returns the product beside the
  // gate gradients (facebookresearch/xformers xformers/ops/swiglu_op.py). The backward computes
  // silu(x1) for the gate gradients anyway, so the rebuild is one multiply in the same kernel: no
  // time is charged.
  // Required with it: fused_swiglu_source. false: the product is kept (Megatron, TE, eager).
  bool fused_swiglu_backward = false;
  std::string fused_swiglu_source;
  // Whether the stack runs a dense SwiGLU FFN's activation as eager PyTorch ops,
  // w3(silu(w1 x) * w2 x): a silu kernel (reads and writes f wide, 4f B a token in BF16) and a
  // multiply (reads two, writes one: 6f B), 10f B in two kernels where a fused activation moves
  // 6f B in one, and autograd keeps silu's output for the multiply's backward beside the two gate
  // outputs (6f B a token, not 4f). InternEvo's FeedForward at fa7337b does this
  // (internlm/model/linear.py). The backward follows the model's convention (twice the forward
  // vector work, 20f B), against about 18f B for eager silu and multiply backwards. Norm-act
  // recomputation still frees only the product. Required with it: eager_ops_source. false: fused.
  bool eager_swiglu = false;
  // Whether each residual-stream norm casts the residual to FP32 first and sits in a small
  // checkpointed block that its backward reruns: InternEvo's layers at fa7337b
  // (modeling_internlm.py: norm(_residual.float()) inside activation_checkpoint when
  // dropout_selective_checkpoint, on by default). Charged as a forward of 12d B a token in two
  // kernels (the cast reads 2d and writes 4d, the norm reads 4d and writes 2d) where a BF16 norm
  // moves 4d; the model's convention doubles it for the backward (24d B), which stands for the
  // real 16d (the norm's backward on the FP32 input, the cast's backward) plus the 12d rerun of
  // the block (28d). Kept for the backward: the block's BF16 input, as a plain norm keeps (2d).
  // Required with it: eager_ops_source. false: BF16 norms, not recomputed.
  bool fp32_norm_input = false;
  std::string eager_ops_source;
};

inline constexpr long kMaxVocabDivisibleBy = 65536;

// The vocabulary the stack runs: `vocab` rounded up to a multiple of divisible_by x tp
// (Megatron-LM's _vocab_size_with_padding); unchanged when divisible_by <= 0. Throws
// InputError (stack.vocab_divisible_by) when divisible_by exceeds kMaxVocabDivisibleBy or the
// padded vocabulary would not fit an int (a Strategy built in code skips load_stack's check).
long padded_vocab(long vocab, long divisible_by, long tp);

// Reads configs/plan/stack/NAME.toml. Throws InputError naming file, line and field.
StackProfile load_stack(const std::string& path);

}  // namespace trex::plan
