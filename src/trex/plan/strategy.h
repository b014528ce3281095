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

namespace trex::plan {

struct Run {
  std::string name;
  long seq_len = 4096;
  long global_batch = 0;     // sequences per step
  long micro_batch = 1;      // sequences per micro-batch per data-parallel rank
  double act_bytes = 2;      // activations and weights: bf16
  double grad_bytes = 4;     // fp32 main gradients
  double grad_reduce_bytes = 4;  // bytes per gradient element in the data-parallel reduction
  bool train_mtp = false;    // MTP modules run and are counted
  bool fp8_matmul = false;   // linear layers in FP8 (DeepSeek-V3 style): the FP8 peak, FP8 dispatch
};

enum class Recompute { kNone, kSelective, kFull };
const char* to_string(Recompute r);

struct Strategy {
  std::string name;
  long tp = 1, pp = 1, vpp = 1, dp = 0, cp = 1, ep = 1, etp = 1;  // dp = 0: devices / (tp cp pp)
  long edp = 0;           // derived: tp cp dp / (etp ep)
  int zero = 1;           // 0 none, 1 optimizer state sharded over DP (distributed optimizer), 2 + grads, 3 + weights
  Recompute recompute = Recompute::kNone;
  bool sequence_parallel = true;  // with TP > 1: norms and residuals split over TP
  bool swap_optimizer = false;    // fp32 master and moments live in host memory
  long swap_slots = 3;            // K (3 = load, update, store concurrently)
  double swap_chunk_bytes = 256e6;
  double a2a_overlap = 0;         // fraction of EP all-to-all hidden behind compute (DualPipe-style schedules: ~1)
  double tp_overlap = 0;          // fraction of TP collectives hidden (Megatron default: none)
  bool dp_overlap = true;         // gradient reduce-scatter overlapped with the last backward
  double moe_imbalance = 1.0;     // slowest EP rank's load over the mean (1 = uniform routing)
  bool grouped_gemm = true;       // one grouped GEMM per expert matrix, not one kernel per expert
  bool flash_attention = true;    // fused attention; false: batched GEMMs over all s keys plus
                                  // softmax and dropout kernels over the s x s scores (Megatron-LM 2021)
};

// Files holding a [run] or a [strategy] table (read_run/read_strategy in strategy_toml.h
// read the same tables inside another file).
Run load_run(const std::string& path);
Strategy load_strategy(const std::string& path);

// Completes dp and edp and checks that the strategy can run the model on the cluster with the
// run's batch: the products cover the devices, TP divides the heads, EP the experts, ETP the
// expert width, the folding invariant holds, every pipeline stage has a layer, the batch splits
// into whole micro-batches. Throws InputError::field("strategy.<axis>", reason) naming the
// failing factor.
void complete_and_check(const model::ModelConfig& m, const Cluster& c, const Run& run, Strategy& s);

}  // namespace trex::plan
