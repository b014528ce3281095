// Categories from each format's own classification first, then from operator type or name.
#include <gtest/gtest.h>

#include "trex/profile/kernel_category.h"

namespace trex::profile {
namespace {

KernelCategory of(const std::string& name, const std::string& kind, const std::string& format,
                  const std::string& op_type = "") {
  KernelRecord r;
  r.name = name;
  r.trace_kind = kind;
  r.op_type = op_type;
  return classify_kernel(r, format);
}

TEST(KernelCategory, TrexSpansKeepTheirCategory) {
  EXPECT_EQ(of("attn.wq_a", "gemm", "trex"), KernelCategory::kMatmul);
  EXPECT_EQ(of("attn.sparse_attention", "attention", "trex"), KernelCategory::kAttention);
  EXPECT_EQ(of("moe.combine", "moe_dispatch", "trex"), KernelCategory::kDataMovement);
  EXPECT_EQ(of("rmsnorm", "elementwise", "trex"), KernelCategory::kElementwise);
  EXPECT_EQ(of("bf16_to_fp32", "elementwise", "trex"), KernelCategory::kCast);
  EXPECT_EQ(of("optimizer_step", "optimizer", "trex"), KernelCategory::kOptimizer);
  EXPECT_EQ(of("pack_batch", "data", "trex"), KernelCategory::kOther);
}

TEST(KernelCategory, KinetoNames) {
  EXPECT_EQ(of("sm90_xmma_gemm_bf16bf16_bf16f32", "kernel", "kineto"), KernelCategory::kMatmul);
  EXPECT_EQ(of("flash_bwd_dq_dk_dv_loop_kernel", "kernel", "kineto"), KernelCategory::kAttention);
  EXPECT_EQ(of("ncclDevKernel_AllGather_RING_LL", "kernel", "kineto"), KernelCategory::kCommunication);
  EXPECT_EQ(of("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", "kineto"), KernelCategory::kDataMovement);
  EXPECT_EQ(of("aten::_to_copy", "cpu_op", "kineto"), KernelCategory::kCast);
  EXPECT_EQ(of("void at::native::vectorized_elementwise_kernel<4, at::native::MulFunctor<float>>", "kernel",
               "kineto"),
            KernelCategory::kElementwise);
  EXPECT_EQ(of("my_custom_thing", "kernel", "kineto"), KernelCategory::kOther);
}

TEST(KernelCategory, MsprofOperatorTypeBeforeNodeName) {
  EXPECT_EQ(of("layer0/attn/MatMulV3", "AI_CORE", "msprof", "MatMulV3"), KernelCategory::kMatmul);
  EXPECT_EQ(of("layer0/attn/Cast_1", "AI_VECTOR_CORE", "msprof", "Cast"), KernelCategory::kCast);
  EXPECT_EQ(of("x/SparseAttnSharedkvGrad", "MIX_AIC", "msprof", "SparseAttnSharedkvGrad"), KernelCategory::kAttention);
  EXPECT_EQ(of("x/hcom_allReduce_", "HCCL", "msprof", "hcom_allReduce_"), KernelCategory::kCommunication);
  EXPECT_EQ(of("x/TransData", "AI_VECTOR_CORE", "msprof", "TransData"), KernelCategory::kDataMovement);
}

}  // namespace
}  // namespace trex::profile
