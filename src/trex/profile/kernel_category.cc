#include "trex/profile/kernel_category.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>

namespace trex::profile {
namespace {

bool contains_any(const std::string& s, std::initializer_list<const char*> words) {
  for (const char* w : words)
    if (s.find(w) != std::string::npos) return true;
  return false;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

bool is_cast_name(const std::string& n) {
  return contains_any(n, {"cast", "_to_copy", "aten::to", "convert", "to_dtype", "todtype", "type_as",
                          "bf16_to_fp32", "fp32_to_bf16"});
}

}  // namespace

const char* to_string(KernelCategory c) {
  switch (c) {
    case KernelCategory::kMatmul: return "matmul";
    case KernelCategory::kAttention: return "attention";
    case KernelCategory::kElementwise: return "elementwise";
    case KernelCategory::kCast: return "cast";
    case KernelCategory::kDataMovement: return "data_movement";
    case KernelCategory::kCommunication: return "communication";
    case KernelCategory::kOptimizer: return "optimizer";
    case KernelCategory::kOther: return "other";
  }
  return "other";
}

KernelCategory classify_kernel(const KernelRecord& k, const std::string& format) {
  const std::string name = lower(k.name), type = lower(k.op_type), kind = lower(k.trace_kind);
  if (format == "trex") {
    // trex's spans are classified where they are opened (core/trace.h).
    if (kind == "gemm") return KernelCategory::kMatmul;
    if (kind == "attention") return KernelCategory::kAttention;
    if (kind == "elementwise") return is_cast_name(name) ? KernelCategory::kCast : KernelCategory::kElementwise;
    if (kind == "moe_dispatch") return KernelCategory::kDataMovement;
    if (kind == "optimizer") return KernelCategory::kOptimizer;
    return KernelCategory::kOther;
  }
  if (kind == "gpu_memcpy" || kind == "gpu_memset") return KernelCategory::kDataMovement;
  // An operator type says what a node is; its name also says where it sits ("layer3/attn/Cast_2").
  const std::string s = type.empty() ? name : type;
  if (kind == "hccl" || kind == "communication" ||
      contains_any(s, {"hcom", "hccl", "nccl", "allreduce", "all_reduce", "allgather", "all_gather",
                       "reducescatter", "reduce_scatter", "alltoall", "all_to_all", "broadcast", "c10d::",
                       "sendrecv", "send_recv"}))
    return KernelCategory::kCommunication;
  if (contains_any(s, {"attention", "attn", "flash", "sdpa", "fmha"})) return KernelCategory::kAttention;
  if (contains_any(s, {"matmul", "gemm", "gemv", "aten::mm", "aten::bmm", "aten::addmm", "aten::linear",
                       "aten::baddbmm", "cutlass", "cublas", "xmma", "wgmma", "conv"}) ||
      name.rfind("mm", 0) == 0 || name.rfind("bmm", 0) == 0)
    return KernelCategory::kMatmul;
  if (is_cast_name(s)) return KernelCategory::kCast;
  if (contains_any(s, {"adam", "optimizer", "sgd", "lamb"})) return KernelCategory::kOptimizer;
  if (contains_any(s, {"memcpy", "memset", "copy", "transpose", "permute", "contiguous", "transdata", "gather",
                       "scatter", "index", "concat", "aten::cat", "slice", "reshape", "view", "dispatch",
                       "combine", "expand", "pad", "split", "stack"}))
    return KernelCategory::kDataMovement;
  if (contains_any(s, {"elementwise", "add", "mul", "sub", "div", "norm", "silu", "gelu", "relu", "swiglu",
                       "rope", "rotary", "softmax", "exp", "log", "reduce", "sum", "mean", "sigmoid", "tanh",
                       "where", "neg", "sqrt", "pow", "cross_entropy", "loss", "dropout", "mask", "fill",
                       "clamp", "abs", "max", "min", "cumsum", "topk", "sort", "arg", "embedding", "vector",
                       "square", "zero"}))
    return KernelCategory::kElementwise;
  return KernelCategory::kOther;
}

}  // namespace trex::profile
