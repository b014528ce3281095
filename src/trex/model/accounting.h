// Parameter counts and training FLOPs per token of a ModelConfig, computed from the shape
// list of spec/deepseek-v4.md section 1 (V4), the MLA shapes of DeepSeek-V3 and the
// standard GPT/Llama shapes.
//
// Conventions (named, because published MFU figures differ by up to 2x for one run):
//   trex        3 x F_fwd, every forward contraction over the keys each query actually
//               attends (causal, window, compressed, top-k), indexer scoring, mHC, pooling
//               (spec/deepseek-v4.md section 13)
//   6n          6 x activated parameters (no attention term)
//   megatron    every GEMM 3x, attention dense and causal (s/2 keys per query on average),
//               no window or sparsity discount (Megatron-LM num_floating_point_operations)
//   dense-attn  every GEMM 3x, attention over all s keys, no causal discount (PaLM
//               appendix B, torchtitan)
//   megatron-hfu  Narayanan et al. 2021: full activation recomputation, so layers 4x
//               forward, attention over all s keys, logits 3x: 96 B s L h^2 (1 + s/6h + V/16Lh)
// "Activated" parameters exclude the input embedding (a lookup) and the MTP blocks, and
// count the K routed experts a token visits plus the shared ones; a tied head counts once.
#pragma once

#include <string>
#include <vector>

#include "trex/model/config.h"

namespace trex::model {

// Parameters of one block (a main layer or the block of an MTP module), by role.
struct LayerParams {
  double attention_matmul = 0;  // projections every token multiplies by (q, kv, o, low-rank)
  double compressor_matmul = 0; // V4 compressor wkv and wgate
  double indexer_matmul = 0;    // V4 indexer wq_b, weights_proj, its compressor
  double attention_other = 0;   // norms inside attention, sinks, ape, biases
  double router = 0;            // gate weight (and bias)
  double expert_one = 0;        // one routed expert (w1, w3, w2)
  double routed_experts = 0;    // all E routed experts
  double shared_experts = 0;
  double dense_ffn = 0;         // a dense FFN layer (with biases)
  double norms = 0;             // attn_norm and ffn_norm (weights and biases)
  double mhc = 0;               // mHC Phi, b and s of both sites
  double mhc_matmul = 0;        // the Phi part alone
  double total() const;
  // Matrix parameters one token multiplies by (the K visited experts plus shared ones).
  double active_matmul(const ModelConfig& m) const;
};

LayerParams layer_params(const ModelConfig& m, int layer, bool mtp_block = false);

struct ParamCounts {
  double embedding = 0;   // input embedding (and learned positions)
  double head = 0;        // output projection (0 when tied to the embedding)
  double layers = 0;      // all main layers
  double routed_experts = 0;  // the routed-expert share of `layers`
  double final_norms = 0; // final norm and mHC head
  double mtp = 0;         // the MTP modules (sharing embedding and head)
  double total_main() const { return embedding + head + layers + final_norms; }
  double total() const { return total_main() + mtp; }
  double activated = 0;   // see the header comment
};

ParamCounts count_parameters(const ModelConfig& m);

// Forward FLOPs per token of the trex convention, averaged over the positions of a sequence
// of `seq` tokens, by term (spec/deepseek-v4.md section 13).
struct ForwardFlops {
  double linear = 0;          // every linear layer of the blocks, compressor pooling
  double core_attention = 0;  // QK^T and PV over the actual key sets
  double indexer = 0;         // lightning-indexer scoring
  double mhc = 0;             // mHC Phi and stream sums
  double lm_head = 0;
  double total() const { return linear + core_attention + indexer + mhc + lm_head; }
};

ForwardFlops forward_flops(const ModelConfig& m, long seq, bool include_mtp);

enum class FlopConvention { kTrex, kSixN, kMegatron, kDenseAttention, kMegatronHfu };
const std::vector<FlopConvention>& all_conventions();
const char* to_string(FlopConvention c);
// Throws InputError naming `field` for an unknown name.
FlopConvention parse_convention(const std::string& name, const std::string& field);
// One-line statement of what the convention counts.
const char* describe(FlopConvention c);

// Training FLOPs per token (forward + backward) under a convention.
double training_flops_per_token(const ModelConfig& m, long seq, FlopConvention c, bool include_mtp);

// Mean number of keys a query attends in main layer `layer` (or the MTP block when
// layer < 0), over positions 0..seq-1: causal, window, compressed entries and top-k.
double mean_attended_keys(const ModelConfig& m, int layer, long seq);
// Mean number of compressed entries visible to a query for ratio r (the indexer's candidates).
double mean_visible_entries(int ratio, long seq);

}  // namespace trex::model
