#include "trex/plan/strategy.h"

#include <algorithm>

#include "trex/plan/strategy_toml.h"

#include "trex/model/toml_fields.h"
#include "trex/util/error.h"

namespace trex::plan {

using model::TomlFields;

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kNormAct: return "norm-act";
    case Recompute::kMoe: return "moe";
    case Recompute::kFull: return "full";
  }
  return "?";
}

const char* to_string(MoeTokenDrop d) {
  switch (d) {
    case MoeTokenDrop::kDropless: return "dropless";
    case MoeTokenDrop::kDrop: return "drop";
    case MoeTokenDrop::kDropAndPad: return "drop-and-pad";
  }
  return "?";
}

Recompute parse_recompute(const std::string& rc) {
  return rc == "full"        ? Recompute::kFull
         : rc == "selective" ? Recompute::kSelective
         : rc == "norm-act"  ? Recompute::kNormAct
         : rc == "moe"       ? Recompute::kMoe
                             : Recompute::kNone;
}

Run read_run(const toml::table& t, const std::string& file) {
  TomlFields f(file, t, "run");
  Run r;
  r.name = f.text_or("name", "run");
  r.seq_len = f.integer("seq_len", 1);
  r.global_batch = f.integer("global_batch", 1);
  r.micro_batch = f.integer_or("micro_batch", 1, 1);
  // Up to 6: a bf16 .grad beside a full fp32 accumulation buffer (strategy.h). Such a run
  // reduces at most the fp32 copy, so the reduction's default stops at 4.
  r.grad_bytes = f.number_or("grad_bytes", 4, 2, 6);
  r.grad_reduce_bytes = f.number_or("grad_reduce_bytes", std::min(r.grad_bytes, 4.0), 1, 4);
  r.tied_grad_reduce_bytes = f.number_or("tied_grad_reduce_bytes", r.grad_reduce_bytes, 1, 4);
  r.train_mtp = f.boolean_or("train_mtp", false);
  r.fp8_matmul = f.choice_or("matmul_precision", "bf16", {"bf16", "fp8"}) == "fp8";
  {
    std::string recipe = f.choice_or("fp8_recipe", "delayed", {"delayed", "current", "mxfp8", "blockwise"});
    r.fp8_cast_bytes = recipe == "current" ? 6 : recipe == "delayed" ? 4 : 4 + 1.0 / 32;
  }
  r.param_gather_bytes = f.choice_or("param_gather_precision", "bf16", {"bf16", "fp8"}) == "fp8" ? 1 : 2;
  if (r.param_gather_bytes < 2 && !r.fp8_matmul)
    f.fail("param_gather_precision", "fp8 needs matmul_precision = \"fp8\" (the weights gathered in FP8 feed FP8 matmuls)");
  r.act_bytes = f.choice_or("activation_precision", "bf16", {"bf16", "fp8"}) == "fp8" ? 1 : 2;
  r.logits_bytes = f.choice_or("logits_precision", "fp32", {"fp32", "bf16"}) == "bf16" ? 2 : 4;
  r.logits_chunks = f.integer_or("logits_chunks", 1, 1);
  r.logits_grad_in_place = f.boolean_or("logits_grad_in_place", false);
  f.allow({"source", "note"});
  f.finish();
  if (r.seq_len > (1L << 24)) f.fail("seq_len", "implausibly long");
  return r;
}

Strategy strategy_on_stack(const StackProfile& stack) {
  Strategy s;
  s.stack = stack;
  s.moe_overlap = stack.moe_overlap;
  s.moe_dispatcher = stack.moe_dispatcher;
  s.tp_overlap = stack.tp_overlap;
  s.dp_overlap = stack.dp_overlap;
  s.param_gather_overlap = stack.param_gather_overlap;
  s.zero3_prefetch = stack.zero3_prefetch;
  s.pp_overlap = stack.pp_overlap;
  s.sequence_parallel = stack.sequence_parallel;
  return s;
}

Strategy read_strategy(const toml::table& t, const std::string& file, const StackProfile& stack) {
  TomlFields f(file, t, "strategy");
  Strategy s = strategy_on_stack(stack);
  s.name = f.text_or("name", "strategy");
  s.tp = f.integer_or("tp", 1, 1);
  s.pp = f.integer_or("pp", 1, 1);
  s.vpp = f.integer_or("vpp", 1, 1);
  s.microbatch_group = f.integer_or("microbatch_group", 0, 0);
  s.dp = f.integer_or("dp", 0, 0);
  s.cp = f.integer_or("cp", 1, 1);
  s.ep = f.integer_or("ep", 1, 1);
  s.etp = f.integer_or("etp", 1, 1);
  s.zero = int(f.integer_or("zero", 1, 0));
  if (s.zero > 3) f.fail("zero", "must be 0, 1, 2 or 3");
  std::string rc = f.choice_or("recompute", "none", {"none", "selective", "norm-act", "moe", "full"});
  s.recompute = parse_recompute(rc);
  s.recompute_layers = f.integer_or("recompute_layers", 0, 0);
  s.sequence_parallel = f.boolean_or("sequence_parallel", stack.sequence_parallel);
  s.swap_optimizer = f.boolean_or("swap_optimizer", false);
  s.swap_slots = f.integer_or("swap_slots", 3, 2);
  if (s.swap_slots > 3) f.fail("swap_slots", "must be 2 or 3");
  s.swap_chunk_bytes = f.number_or("swap_chunk_bytes", 256e6, 1e6, 1e12);
  s.a2a_overlap = f.number_or("a2a_overlap", 0, 0, 1);
  s.moe_overlap = parse_moe_overlap(
      f.choice_or("moe_overlap", to_string(stack.moe_overlap), {"none", "1f1b-a2a", "dualpipe"}), "strategy.moe_overlap");
  s.moe_dispatcher = parse_moe_dispatcher(
      f.choice_or("moe_dispatcher", to_string(stack.moe_dispatcher), {"alltoall", "deepep", "hybridep"}), "strategy.moe_dispatcher");
  s.tp_overlap = f.number_or("tp_overlap", stack.tp_overlap, 0, 1);
  s.dp_overlap = f.boolean_or("dp_overlap", stack.dp_overlap);
  s.param_gather_overlap = f.boolean_or("param_gather_overlap", stack.param_gather_overlap);
  s.zero3_prefetch = f.boolean_or("zero3_prefetch", stack.zero3_prefetch);
  s.grad_allreduce = f.boolean_or("grad_allreduce", false);
  s.param_broadcasts = f.integer_or("param_broadcasts", 0, 0);
  s.pp_overlap = f.boolean_or("pp_overlap", stack.pp_overlap);
  s.shard_group = f.integer_or("shard_group", 0, 0);
  s.layout.layout = f.text_or("pipeline_layout", "");
  s.layout.first_stage_layers = f.integer_or("first_stage_layers", 0, 0);
  s.layout.last_stage_layers = f.integer_or("last_stage_layers", 0, 0);
  s.moe_imbalance = f.number_or("moe_imbalance", 1, 1, 100);
  s.grouped_gemm = f.boolean_or("grouped_gemm", true);
  s.moe_cuda_graphs = f.choice_or("cuda_graphs", "partial", {"partial", "none"}) == "partial";
  const std::string drop = f.choice_or("moe_token_drop", "dropless", {"dropless", "drop", "drop-and-pad"});
  s.moe_token_drop = drop == "drop-and-pad" ? MoeTokenDrop::kDropAndPad
                     : drop == "drop"       ? MoeTokenDrop::kDrop
                                            : MoeTokenDrop::kDropless;
  s.flash_attention = f.boolean_or("flash_attention", true);
  s.fused_softmax = f.boolean_or("fused_softmax", true);
  f.allow({"source", "note"});
  f.finish();
  return s;
}

namespace {

toml::table parse(const std::string& path) { return TomlFields::parse_file(path); }

const toml::table& section(const toml::table& root, const std::string& path, const char* key) {
  const toml::node* n = root.get(key);
  if (n == nullptr || !n->is_table()) throw InputError(path, 0, std::string(key) + ": missing table [" + key + "]");
  for (const auto& [k, v] : root)
    if (k.str() != key) throw InputError(path, long(v.source().begin.line), std::string(k.str()) + ": unknown table");
  return *n->as_table();
}

[[noreturn]] void refuse(const std::string& axis, const std::string& why) {
  throw InputError::field("strategy." + axis, why);
}

std::string num(long v) { return std::to_string(v); }

}  // namespace

Run load_run(const std::string& path) {
  toml::table root = parse(path);
  return read_run(section(root, path, "run"), path);
}

Strategy load_strategy(const std::string& path, const StackProfile& stack) {
  toml::table root = parse(path);
  return read_strategy(section(root, path, "strategy"), path, stack);
}

void complete_and_check(const model::ModelConfig& m, const Cluster& c, const Run& run, Strategy& s) {
  long devices = c.devices();
  long tcp = s.tp * s.cp * s.pp;
  if (devices % tcp != 0)
    refuse("tp", "tp x cp x pp = " + num(tcp) + " does not divide the " + num(devices) + " devices of " + c.name);
  long dp = devices / tcp;
  if (s.dp != 0 && s.dp != dp)
    refuse("dp", "tp x cp x dp x pp = " + num(tcp * s.dp) + " but the cluster has " + num(devices) + " devices");
  s.dp = dp;
  const model::AttentionConfig& a = m.attention;
  if (a.heads % s.tp != 0) refuse("tp", "tp " + num(s.tp) + " does not divide the " + num(a.heads) + " attention heads");
  if (a.kind == model::AttentionKind::kGqa && a.kv_heads % s.tp != 0 && s.tp % a.kv_heads != 0)
    refuse("tp", "tp " + num(s.tp) + " and the " + num(a.kv_heads) + " key/value heads do not divide one another");
  if (a.kind == model::AttentionKind::kV4 && a.o_groups % s.tp != 0)
    refuse("tp", "tp " + num(s.tp) + " does not divide the " + num(a.o_groups) + " output-projection groups");
  if (!s.fused_softmax && s.flash_attention)
    refuse("fused_softmax", "the softmax kernel choice applies only without FlashAttention (flash_attention = false)");
  if (!s.flash_attention && a.kind == model::AttentionKind::kV4)
    refuse("flash_attention", "V4's sparse attention has no unfused (dense-score) form in the planner");
  if (!m.is_moe() || m.ffn.dense_layers > 0) {
    if (m.ffn.hidden % s.tp != 0) refuse("tp", "tp " + num(s.tp) + " does not divide the FFN width " + num(m.ffn.hidden));
  }
  // The vocabulary need not divide TP: Megatron pads it to a multiple, and so does the planner's head.
  if (run.seq_len % s.cp != 0) refuse("cp", "cp " + num(s.cp) + " does not divide the sequence length " + num(run.seq_len));
  if (m.is_moe()) {
    if (m.ffn.routed_experts % s.ep != 0)
      refuse("ep", "ep " + num(s.ep) + " does not divide the " + num(m.ffn.routed_experts) + " routed experts");
    if (m.ffn.expert_hidden % s.etp != 0)
      refuse("etp", "etp " + num(s.etp) + " does not divide the expert width " + num(m.ffn.expert_hidden));
    if (m.ffn.shared_experts > 0 && m.ffn.expert_hidden % s.tp != 0)
      refuse("tp", "tp " + num(s.tp) + " does not divide the shared-expert width " + num(m.ffn.expert_hidden));
    long attn = s.tp * s.cp * s.dp;
    if (attn % (s.etp * s.ep) != 0)
      refuse("ep", "folding invariant broken: tp x cp x dp = " + num(attn) + " is not a multiple of etp x ep = " +
                       num(s.etp * s.ep));
    s.edp = attn / (s.etp * s.ep);
  } else {
    if (s.ep != 1) refuse("ep", "ep " + num(s.ep) + " needs routed experts; " + m.name + " is dense");
    if (s.etp != 1) refuse("etp", "etp " + num(s.etp) + " needs routed experts; " + m.name + " is dense");
    s.edp = s.tp * s.cp * s.dp;
  }
  // MTP blocks ride on the last stage, so only the main layers count here. An explicit layout
  // may give a chunk only the embedding or the loss (Megatron-Core's
  // --account-for-embedding/loss-in-pipeline-split: 94 layers + E + L over 96 chunks);
  // pipeline_chunks checks it below.
  if (s.layout.layout.empty() && s.pp * s.vpp > m.layers)
    refuse("pp", "pp x vpp = " + num(s.pp * s.vpp) + " stages but only " + num(m.layers) +
                     " layers: a pipeline stage would have no layer");
  if (run.global_batch % (s.dp * run.micro_batch) != 0)
    refuse("dp", "the global batch " + num(run.global_batch) + " does not split into dp " + num(s.dp) +
                     " x micro-batch " + num(run.micro_batch) + " x whole micro-batches");
  long micro = run.global_batch / (s.dp * run.micro_batch);
  if (s.vpp > 1 && micro % s.pp != 0)
    refuse("vpp", "the interleaved schedule needs the " + num(micro) + " micro-batches to be a multiple of pp " + num(s.pp));
  // Megatron-Core's interleaved schedule refuses a group outside [pp, m] (megatron/core/
  // pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving): with fewer
  // than pp micro-batches a group's chunk v + 1 on the first stage waits for chunk v of the
  // same micro-batch to leave the last stage, and under Megatron's warm-up the ranks deadlock
  // (docs/plan.md, "Chunks in flight").
  if (s.microbatch_group > 0 && s.vpp <= 1)
    refuse("microbatch_group", "a micro-batch group per virtual stage needs an interleaved schedule (vpp > 1)");
  if (s.microbatch_group > 0 && (s.microbatch_group < s.pp || s.microbatch_group > micro))
    refuse("microbatch_group", "Megatron-Core's interleaved schedule takes pp <= N <= m micro-batches per group: pp " +
                                   num(s.pp) + ", m " + num(micro) + ", N " + num(s.microbatch_group));
  if (s.grad_allreduce && s.zero != 1)
    refuse("grad_allreduce", "an all-reduce of the gradients before a sharded step needs zero = 1 (zero = " + num(s.zero) + ")");
  if (s.param_broadcasts > 0 && s.zero != 1)
    refuse("param_broadcasts", "broadcasts of the updated weight shards need zero = 1 (zero = " + num(s.zero) + ")");
  if (s.shard_group > 0 && (s.zero < 3 || (s.cp * s.dp) % s.shard_group != 0))
    refuse("shard_group", "shard_group " + num(s.shard_group) + " needs zero = 3 and must divide cp x dp = " + num(s.cp * s.dp));
  (void)pipeline_chunks(s.layout, m.layers, run.train_mtp ? m.mtp_depth : 0, s.pp, s.vpp);  // refuses a bad layout
  if (run.fp8_matmul && !c.device.peak.flops_fp8)
    throw InputError::field("run.matmul_precision", "fp8 but the device " + c.device.device.name + " states no flops_fp8");
  if (s.swap_optimizer && (c.host_bytes_per_device <= 0 || c.host_link_bw <= 0))
    refuse("swap_optimizer", "the cluster " + c.name + " states no host memory or host link bandwidth");
}

}  // namespace trex::plan
