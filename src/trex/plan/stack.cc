#include "trex/plan/stack.h"

#include <algorithm>
#include <limits>
#include <string>

#include "trex/model/toml_fields.h"
#include "trex/util/error.h"

namespace trex::plan {

using model::TomlFields;

const char* to_string(MoeOverlap o) {
  switch (o) {
    case MoeOverlap::kNone: return "none";
    case MoeOverlap::kOneFOneB: return "1f1b-a2a";
    case MoeOverlap::kDualPipe: return "dualpipe";
  }
  return "?";
}

MoeOverlap parse_moe_overlap(const std::string& s, const std::string& field) {
  if (s == "none") return MoeOverlap::kNone;
  if (s == "1f1b-a2a") return MoeOverlap::kOneFOneB;
  if (s == "dualpipe") return MoeOverlap::kDualPipe;
  throw InputError::field(field, "must be none, 1f1b-a2a or dualpipe, got " + s);
}

const char* to_string(MoeDispatcher d) {
  switch (d) {
    case MoeDispatcher::kDeepEp: return "deepep";
    case MoeDispatcher::kHybridEp: return "hybridep";
    default: return "alltoall";
  }
}

MoeDispatcher parse_moe_dispatcher(const std::string& s, const std::string& field) {
  if (s == "alltoall") return MoeDispatcher::kAllToAll;
  if (s == "deepep") return MoeDispatcher::kDeepEp;
  if (s == "hybridep") return MoeDispatcher::kHybridEp;
  throw InputError::field(field, "must be alltoall, deepep or hybridep, got " + s);
}

long padded_vocab(long vocab, long divisible_by, long tp) {
  if (divisible_by <= 0) return vocab;
  if (divisible_by > kMaxVocabDivisibleBy)
    throw InputError::field("stack.vocab_divisible_by",
                            "at most " + std::to_string(kMaxVocabDivisibleBy) + ", got " + std::to_string(divisible_by));
  long multiple = 0, padded = 0;
  if (__builtin_mul_overflow(divisible_by, std::max(1L, tp), &multiple) ||
      __builtin_add_overflow(vocab, multiple - 1, &padded) ||
      (padded = padded / multiple * multiple) > long(std::numeric_limits<int>::max())) {
    // Name the input that causes it: TP when the stack's multiple alone would still fit.
    const bool tp_causes = tp > 1 && padded_vocab(vocab, divisible_by, 1) <= long(std::numeric_limits<int>::max());
    throw InputError::field(tp_causes ? "strategy.tp" : "stack.vocab_divisible_by",
                            std::string(tp_causes ? "TP " + std::to_string(tp) + " x vocab_divisible_by " + std::to_string(divisible_by)
                                                  : std::to_string(divisible_by) + " x TP " + std::to_string(tp)) +
                                " pads the vocabulary of " + std::to_string(vocab) + " beyond 2^31 - 1");
  }
  return padded;
}

StackProfile load_stack(const std::string& path) {
  toml::table root = TomlFields::parse_file(path);
  TomlFields top(path, root, "");
  const toml::table* st = top.table("stack");
  if (st == nullptr) throw InputError(path, 0, "stack: missing table [stack]");
  top.finish();
  TomlFields f(path, *st, "stack");
  StackProfile p;
  p.file = path;
  p.name = f.text("name");
  p.source = f.text("source");
  p.matmul_scale = f.number_or("matmul_scale", 1, 0.05, 2);
  p.attention_scale = f.number_or("attention_scale", 1, 0.05, 2);
  p.memory_scale = f.number_or("memory_scale", 1, 0.05, 2);
  p.launch_scale = f.number_or("launch_scale", 1, 0, 10);
  p.tp_overlap = f.number_or("tp_overlap", 0, 0, 1);
  p.dp_overlap = f.boolean_or("dp_overlap", true);
  p.param_gather_overlap = f.boolean_or("param_gather_overlap", true);
  p.zero3_prefetch = f.boolean_or("zero3_prefetch", true);
  p.pp_overlap = f.boolean_or("pp_overlap", false);
  p.pp_scatter_gather = f.boolean_or("pp_scatter_gather", false);
  p.sequence_parallel = f.boolean_or("sequence_parallel", true);
  p.moe_overlap = parse_moe_overlap(f.choice_or("moe_overlap", "none", {"none", "1f1b-a2a", "dualpipe"}), "stack.moe_overlap");
  p.moe_dispatcher = parse_moe_dispatcher(f.choice_or("moe_dispatcher", "alltoall", {"alltoall", "deepep", "hybridep"}), "stack.moe_dispatcher");
  p.comm_sm_fraction = f.number_or("comm_sm_fraction", 0, 0, 0.9);
  p.moe_fp8_dispatch = f.boolean_or("moe_fp8_dispatch", false);
  p.moe_host_per_expert_s = f.number_or("moe_host_per_expert_s", 0, 0, 0.1);
  p.moe_host_eager_s = f.number_or("moe_host_eager_s", 0, 0, 0.1);
  p.moe_host_alltoall_s = f.number_or("moe_host_alltoall_s", 0, 0, 0.1);
  p.step_overhead = f.number_or("step_overhead", 0, 0, 1);
  p.straggler_scale = f.number_or("straggler_scale", 1, 0, 10);
  p.vocab_divisible_by = f.integer_or("vocab_divisible_by", 0, 0);
  if (p.vocab_divisible_by > kMaxVocabDivisibleBy)
    f.fail("vocab_divisible_by", "at most " + std::to_string(kMaxVocabDivisibleBy) + ", got " + std::to_string(p.vocab_divisible_by));
  p.tensor_core_align_bytes = f.number_or("tensor_core_align_bytes", 0, 0, 256);
  if (f.has("tensor_core_align_bytes") && !f.has("tensor_core_align_source"))
    f.fail("tensor_core_align_source", "missing (the alignment rate needs a source)");
  p.tensor_core_align_source = f.text_or("tensor_core_align_source", "");
  p.fused_swiglu_backward = f.boolean_or("fused_swiglu_backward", false);
  if (p.fused_swiglu_backward && !f.has("fused_swiglu_source"))
    f.fail("fused_swiglu_source", "missing (a fused SwiGLU backward needs a source)");
  p.fused_swiglu_source = f.text_or("fused_swiglu_source", "");
  p.eager_swiglu = f.boolean_or("eager_swiglu", false);
  p.fp32_norm_input = f.boolean_or("fp32_norm_input", false);
  if ((p.eager_swiglu || p.fp32_norm_input) && !f.has("eager_ops_source"))
    f.fail("eager_ops_source", "missing (eager_swiglu and fp32_norm_input need a source)");
  p.eager_ops_source = f.text_or("eager_ops_source", "");
  // A source names the evidence for a claim; one given without its claim is a mistake in the file
  // (a flag left false, or misspelt), not something to keep quietly.
  if (f.has("tensor_core_align_source") && !f.has("tensor_core_align_bytes"))
    f.fail("tensor_core_align_source", "given without tensor_core_align_bytes, the rate it sources");
  if (f.has("fused_swiglu_source") && !p.fused_swiglu_backward)
    f.fail("fused_swiglu_source", "given while fused_swiglu_backward is false");
  if (f.has("eager_ops_source") && !p.eager_swiglu && !p.fp32_norm_input)
    f.fail("eager_ops_source", "given while eager_swiglu and fp32_norm_input are both false");
  f.allow({"note", "fitted"});
  f.finish();
  return p;
}

}  // namespace trex::plan
