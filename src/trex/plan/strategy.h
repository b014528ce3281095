// What a training step runs (Run) and how it is laid out over the devices (Strategy), each read
// from a TOML table ([run] in configs/run/, [strategy] in configs/strategy/; a validation or
// scenario file may hold both inline), and the checks that refuse an invalid strategy with its
// reason before any prediction or search.
//
// Rank layouts (spec/swap-optimizer-and-parallelism.md section 7, MoE parallel folding):
//   attention:  world = TP x CP x DP x PP     rank = tp + TP (cp + CP (dp + DP pp))
//   MoE:        world = ETP x EP x EDP x PP   rank = etp + ETP (ep + EP (edp + EDP pp))
//   invariant:  TP x CP x DP = ETP x EP x EDP
#pragma once

#include <string>

#include "trex/model/config.h"
#include "trex/plan/cluster.h"
#include "trex/plan/pipeline_layout.h"
#include "trex/plan/stack.h"

namespace trex::plan {

struct Run {
  std::string name;
  long seq_len = 4096;
  long global_batch = 0;     // sequences per step
  long micro_batch = 1;      // sequences per micro-batch per data-parallel rank
  double act_bytes = 2;      // storage of the saved GEMM inputs: 2 bf16, 1 FP8 (DeepSeek-V3 caches them in FP8)
  double logits_bytes = 4;   // logits and their gradient: 4 fp32, 2 bf16
  long logits_chunks = 1;    // cross-entropy over the vocabulary in this many sequence chunks
  // The cross-entropy writes the logits' gradient into the logits' own buffer, so they are held
  // once, not twice: Transformer Engine's parallel_cross_entropy (Megatron-Core's
  // `--cross-entropy-fusion-impl te`) saves its input and its backward kernel stores the gradient
  // over it (transformer_engine/pytorch/triton/cross_entropy.py, cross_entropy_backward_kernel).
  bool logits_grad_in_place = false;
  // Gradient bytes per parameter held: 4 fp32 main gradients, 2 bf16/fp16; 6 where a bf16 .grad
  // lives beside a full fp32 accumulation buffer (DeepSpeed's BF16_Optimizer: the bf16 .grad plus
  // fp32_groups_gradients_flat, not partitioned; microsoft/DeepSpeed 56c522386
  // deepspeed/runtime/bf16_optimizer.py).
  double grad_bytes = 4;
  double grad_reduce_bytes = 4;  // bytes per gradient element in the data-parallel reduction
  // Bytes per element of the tied embedding gradient's all-reduce between the end stages
  // (default: grad_reduce_bytes). DeepSpeed's pipeline engine under bf16 all-reduces the fp32
  // copy (_exec_reduce_tied_grads: weight._hp_grad) while its data-parallel reduction casts to bf16.
  // The file reader (strategy.cc) sets it to grad_reduce_bytes unless the file states it; a Run
  // built in code that changes grad_reduce_bytes must set this field too (it stays 4 otherwise).
  double tied_grad_reduce_bytes = 4;
  bool train_mtp = false;    // MTP modules run and are counted
  bool fp8_matmul = false;   // linear layers in FP8: the FP8 peak (FP8 dispatch where the stack says, stack.h moe_fp8_dispatch)
  // HBM bytes per element to quantize a GEMM input to FP8 under the run's recipe (fp8_recipe):
  // every recipe reads the bf16 tensor and writes a row-wise and a column-wise FP8 copy (Hopper's
  // FP8 tensor cores take only the TN layout, so the weight gradient needs the transpose;
  // MXFP8 scales along different axes for the two uses); current scaling first reads the
  // tensor once more for its amax. delayed 2+1+1 = 4, current 2+2+1+1 = 6, mxfp8 and blockwise
  // 4 plus one scale byte per 32 elements (docs/plan.md, "FP8 recipes").
  double fp8_cast_bytes = 4;
  // Bytes per element of the ZeRO-3/FSDP weight all-gathers: 2 (bf16 weights), or 1 where an FP8
  // run casts each weight shard to FP8 before gathering it (torchao's Float8Linear with FSDP2's
  // float8 all-gather: torchtitan's enable_fsdp_float8_all_gather), the scales aside. 1 needs
  // matmul_precision = "fp8" (strategy.cc). The gradients' reduce-scatter keeps grad_reduce_bytes.
  double param_gather_bytes = 2;
};

// Megatron-Core's token-drop modes (megatron/core/transformer/moe/token_dispatcher.py,
// MoEAlltoAllTokenDispatcher): dropless (no capacity factor), drop (a capacity factor, tokens
// over it dropped, no padding), drop-and-pad (moe_pad_expert_input_to_capacity: every expert
// gets exactly its capacity).
enum class MoeTokenDrop { kDropless, kDrop, kDropAndPad };
const char* to_string(MoeTokenDrop d);

// What the backward pass recomputes instead of keeping (docs/plan.md, "The memory model"):
//   none; selective = the attention core (Korthikanti et al.); norm-act = the attention core,
//   the norms, the activation functions and the low-rank up-projections (DeepSeek-V3 section
//   3.2.3); moe = the attention core and the routed experts (Megatron-Core --recompute-modules
//   moe); full = each layer keeps only its input (recompute_layers limits it to that many
//   layers per pipeline chunk, the others keep everything).
enum class Recompute { kNone, kSelective, kNormAct, kMoe, kFull };
const char* to_string(Recompute r);
// The inverse of to_string for its five names (anything else is kNone: callers check the name
// with TomlFields::choice first).
Recompute parse_recompute(const std::string& name);

struct Strategy {
  std::string name;
  long tp = 1, pp = 1, vpp = 1, dp = 0, cp = 1, ep = 1, etp = 1;  // dp = 0: devices / (tp cp pp)
  // Interleaved schedule (vpp > 1): micro-batches per group of one virtual stage, Megatron-Core's
  // microbatch_group_size_per_vp_stage; 0 = pp, its default. Megatron-Core admits pp <= N <= m
  // (complete_and_check refuses the rest); the warm-up, and so the chunks in flight, grow with N.
  long microbatch_group = 0;
  long edp = 0;           // derived: tp cp dp / (etp ep)
  int zero = 1;           // 0 none, 1 optimizer state sharded over DP (distributed optimizer), 2 + grads, 3 + weights
  Recompute recompute = Recompute::kNone;
  long recompute_layers = 0;      // full recomputation: layers per chunk recomputed (0 = all)
  bool sequence_parallel = true;  // with TP > 1: norms and residuals split over TP (stack default)
  bool swap_optimizer = false;    // fp32 master and moments live in host memory
  long swap_slots = 3;            // K (3 = load, update, store concurrently)
  double swap_chunk_bytes = 256e6;
  double a2a_overlap = 0;         // with moe_overlap none: fraction of EP all-to-all hidden by other means
  MoeOverlap moe_overlap = MoeOverlap::kNone;  // the schedule's all-to-all overlap (stack default)
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;  // how tokens reach their experts (stack default)
  double tp_overlap = 0;          // fraction of TP collectives hidden (stack default)
  bool dp_overlap = true;         // gradient reduce-scatter overlapped with the last backward (stack default)
  bool param_gather_overlap = true;  // ZeRO-1/2: weight all-gather after the step under the next forward (stack default)
  // ZeRO-1: the gradients are all-reduced in full before the sharded optimizer step instead of
  // reduce-scattered (twice the traffic of a reduce-scatter at the same grad_reduce_bytes).
  // DeepSpeed's pipeline engine does this under bf16 (ZeRO stage 0 with the BF16_Optimizer,
  // which shards the optimizer state as ZeRO-1 does): `_bf16_reduce_grads` passes the fp32
  // gradients to buffered_allreduce_fallback, whose allreduce_bucket casts them to
  // communication_data_type, bf16 there (microsoft/DeepSpeed 56c522386 deepspeed/runtime/
  // pipe/engine.py, engine.py), so those runs state grad_reduce_bytes = 2 as well: an all-reduce
  // of 2 B moves what a reduce-scatter of 4 B does. Each rank then updates its shard and
  // all-gathers the weights as any ZeRO-1. InternEvo's hybrid ZeRO-1 all-reduces too (fa7337b
  // hybrid_zero_optim.py, reduce_tensor with dst_rank None). A file states it: it depends on the
  // run's precision (fp16 goes through the ZeRO optimizer's reduction), which no stack default can know.
  bool grad_allreduce = false;
  // ZeRO-1: the updated weights return by one broadcast from each rank that owns part of them,
  // not by one all-gather (InternEvo's HybridZeroOptimizer.broadcast_params, fa7337b
  // hybrid_zero_optim.py: a dist.broadcast per owner, all waited on before the step ends). Its
  // _partition_param_list puts whole parameter tensors on ranks, so the owners are at most the
  // model's parameter tensors: this field states that count; min(it, DP) broadcasts a step,
  // each paying the collective's launch and its (DP - 1) hops of latency. 0: one all-gather.
  long param_broadcasts = 0;
  bool zero3_prefetch = true;     // ZeRO-3/FSDP: next layer's gather overlapped with this one's compute (stack default)
  bool pp_overlap = false;        // interleaved pipelines: steady-state P2P under other chunks' compute (stack default)
  long shard_group = 0;           // ZeRO-3/FSDP sharding group (HSDP); 0 = the whole data-parallel group
  LayoutSpec layout;              // explicit pipeline layout (pipeline_layout.h)
  StackProfile stack;             // the software stack the run uses
  double moe_imbalance = 1.0;     // slowest EP rank's load over the mean (1 = uniform routing)
  bool grouped_gemm = true;       // one grouped GEMM per expert matrix, not one kernel per expert
  // CUDA graphs over a MoE layer's static parts (Megatron-Core --cuda-graph-scope): true when
  // the run captures attention and/or the router and EP preprocessing (the recent recipes'
  // default), false ("none") when the whole layer runs eagerly: each MoE layer then exposes
  // the stack's moe_host_eager_s per micro-batch, and moe_host_alltoall_s more with the plain
  // all-to-all dispatcher.
  bool moe_cuda_graphs = true;
  // What a MoE layer does with tokens beyond an expert's capacity (Megatron-Core
  // --moe-expert-capacity-factor, --moe-pad-expert-input-to-capacity). Only the host side is
  // modelled: dropless and drop (no padding) copy per-expert token counts to the host and wait
  // for them inside every MoE layer; drop-and-pad has static counts and no such sync, so the
  // host runs ahead of the GPU (predict.cc, docs/plan.md "host-bound MoE layers").
  MoeTokenDrop moe_token_drop = MoeTokenDrop::kDropless;
  bool flash_attention = true;    // fused attention; false: batched GEMMs over all s keys plus
                                  // softmax and dropout kernels over the s x s scores (Megatron-LM 2021)
  // Without FlashAttention: the scale-mask-softmax runs as Megatron's fused CUDA kernel (true) or
  // falls back to PyTorch's unfused fp32 path (false): a cast to fp32, the scale, the masked_fill,
  // the softmax and the cast back, each a pass over the s x s scores. Megatron's
  // FusedScaleMaskSoftmax.is_kernel_available decides by heads per TP rank, micro-batch and
  // sequence; a file states the outcome (docs/plan.md).
  bool fused_softmax = true;
};

// Files holding a [run] or a [strategy] table (read_run/read_strategy in strategy_toml.h
// read the same tables inside another file).
Run load_run(const std::string& path);
Strategy load_strategy(const std::string& path, const StackProfile& stack = {});

// A default strategy run on `stack`: the fields a stack sets the default of (moe_overlap,
// moe_dispatcher, tp_overlap, dp_overlap, param_gather_overlap, zero3_prefetch, pp_overlap,
// sequence_parallel) take the stack's values,
// as an empty [strategy] table read with that stack would (`plan search --stack` without --base).
Strategy strategy_on_stack(const StackProfile& stack);

// Completes dp and edp and checks that the strategy can run the model on the cluster with the
// run's batch: the products cover the devices, TP divides the heads, EP the experts, ETP the
// expert width, the folding invariant holds, every pipeline stage has a layer, the batch splits
// into whole micro-batches. Throws InputError::field("strategy.<axis>", reason) naming the
// failing factor.
void complete_and_check(const model::ModelConfig& m, const Cluster& c, const Run& run, Strategy& s);

}  // namespace trex::plan
