// Invalid strategies are refused with the reason before any prediction or search.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "plan/plan_test_util.h"
#include "trex/plan/predict.h"
#include "trex/util/error.h"

namespace trex::plan {
namespace {

using testing::make_run;
using testing::shipped_cluster;
using testing::shipped_model;

std::string refusal(const model::ModelConfig& m, const Cluster& c, const Run& r, Strategy s) {
  try {
    complete_and_check(m, c, r, s);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

class StrategyCheck : public ::testing::Test {
 protected:
  model::ModelConfig pro = shipped_model("deepseek-v4-pro");
  model::ModelConfig gpt = shipped_model("gpt3-175b");
  Cluster cm = shipped_cluster("cloudmatrix384");
  plan::Run run = make_run(8192, 384);
};

TEST_F(StrategyCheck, ValidStrategyCompletesDpAndEdp) {
  Strategy s;
  s.pp = 8;
  s.ep = 16;
  s.tp = 2;
  EXPECT_EQ(refusal(pro, cm, run, s), "");
  complete_and_check(pro, cm, run, s);
  EXPECT_EQ(s.dp, 24);
  EXPECT_EQ(s.edp, 3);  // tp cp dp = 48 = etp ep edp = 1 x 16 x 3
}

TEST_F(StrategyCheck, TpMustDivideHeads) {
  Strategy s;
  s.tp = 3;
  s.pp = 2;
  EXPECT_EQ(refusal(pro, cm, run, s), "strategy.tp: tp 3 does not divide the 128 attention heads");
}

TEST_F(StrategyCheck, TpMustDivideOutputGroups) {
  Strategy s;
  s.tp = 32;
  EXPECT_EQ(refusal(pro, cm, run, s), "strategy.tp: tp 32 does not divide the 16 output-projection groups");
}

TEST_F(StrategyCheck, EpMustDivideExperts) {
  Strategy s;
  s.ep = 5;
  s.pp = 2;
  Cluster c = cm;
  set_nodes(c, 40);  // 320 devices, so ep 5 fits the devices but not the 384 experts
  EXPECT_EQ(refusal(pro, c, make_run(8192, 160), s), "strategy.ep: ep 5 does not divide the 384 routed experts");
}

TEST_F(StrategyCheck, FoldingInvariantMustHold) {
  Strategy s;
  s.pp = 16;  // tp cp dp = 24
  s.ep = 16;  // 16 does not divide 24
  EXPECT_EQ(refusal(pro, cm, run, s),
            "strategy.ep: folding invariant broken: tp x cp x dp = 24 is not a multiple of etp x ep = 16");
}

TEST_F(StrategyCheck, EtpMustDivideExpertWidth) {
  Strategy s;
  s.etp = 5;
  s.pp = 1;
  EXPECT_NE(refusal(pro, cm, run, s).find("etp 5 does not divide the expert width 3072"), std::string::npos);
}

TEST_F(StrategyCheck, EveryPipelineStageNeedsALayer) {
  Strategy s;
  s.pp = 64;
  s.vpp = 1;
  Cluster c = cm;
  set_nodes(c, 8);  // 64 devices
  EXPECT_EQ(refusal(pro, c, make_run(8192, 64), s),
            "strategy.pp: pp x vpp = 64 stages but only 61 layers: a pipeline stage would have no layer");
  s.pp = 32;
  s.vpp = 2;
  EXPECT_NE(refusal(pro, c, make_run(8192, 64), s).find("a pipeline stage would have no layer"), std::string::npos);
}

TEST_F(StrategyCheck, AnExplicitLayoutMayGiveAChunkOnlyTheEmbeddingOrTheLoss) {
  // Megatron-Core's --account-for-embedding/loss-in-pipeline-split: 61 layers + E + L over
  // 63 chunks = pp 7 x vpp 9 on 56 devices (dp 8, 7 micro-batches of the batch of 56): the
  // first chunk holds only the embedding, the last only the head. Without the layout the same
  // pp x vpp is refused; a layout that places too few layers is refused too.
  Strategy s;
  s.pp = 7;
  s.vpp = 9;
  Cluster c = cm;
  set_nodes(c, 7);
  EXPECT_NE(refusal(pro, c, make_run(8192, 56), s).find("63 stages but only 61 layers"), std::string::npos);
  std::string layout = "E";
  for (int i = 0; i < 61; ++i) layout += "|t";
  s.layout.layout = layout + "|L";
  EXPECT_EQ(refusal(pro, c, make_run(8192, 56), s), "");
  s.layout.layout = layout.substr(0, layout.size() - 2) + "|L|L";
  EXPECT_NE(refusal(pro, c, make_run(8192, 56), s).find("places 60 transformer layers"), std::string::npos);
}

TEST_F(StrategyCheck, ProductsMustCoverTheDevices) {
  Strategy s;
  s.tp = 8;
  s.pp = 5;
  EXPECT_EQ(refusal(pro, cm, run, s), "strategy.tp: tp x cp x pp = 40 does not divide the 384 devices of CloudMatrix384");
  s.pp = 4;
  s.dp = 7;
  EXPECT_EQ(refusal(pro, cm, run, s), "strategy.dp: tp x cp x dp x pp = 224 but the cluster has 384 devices");
}

TEST_F(StrategyCheck, BatchMustSplitIntoMicroBatches) {
  Strategy s;
  s.pp = 4;  // dp 96
  EXPECT_EQ(refusal(pro, cm, make_run(8192, 100), s),
            "strategy.dp: the global batch 100 does not split into dp 96 x micro-batch 1 x whole micro-batches");
  s.pp = 8;
  s.vpp = 2;  // dp 48: 384 / 48 = 8 micro-batches, a multiple of pp 8
  EXPECT_EQ(refusal(pro, cm, run, s), "");
  EXPECT_NE(refusal(pro, cm, make_run(8192, 192), s).find("multiple of pp 8"), std::string::npos);
}

TEST_F(StrategyCheck, DenseModelsHaveNoExpertParallelism) {
  Strategy s;
  s.tp = 8;
  s.pp = 8;
  s.ep = 2;
  Cluster a100 = shipped_cluster("dgx-a100");
  EXPECT_EQ(refusal(gpt, a100, make_run(2048, 1536), s), "strategy.ep: ep 2 needs routed experts; gpt3-175b is dense");
}

TEST_F(StrategyCheck, CpMustDivideTheSequence) {
  Strategy s;
  s.cp = 3;
  s.pp = 1;
  EXPECT_EQ(refusal(pro, cm, make_run(8192, 384), s), "strategy.cp: cp 3 does not divide the sequence length 8192");
}

TEST_F(StrategyCheck, WeightBroadcastsNeedZero1) {
  Strategy s;
  s.pp = 8;
  s.param_broadcasts = 291;
  s.zero = 1;
  EXPECT_EQ(refusal(pro, cm, run, s), "");
  s.zero = 0;
  EXPECT_EQ(refusal(pro, cm, run, s),
            "strategy.param_broadcasts: broadcasts of the updated weight shards need zero = 1 (zero = 0)");
}

TEST_F(StrategyCheck, GradientAllReduceNeedsAShardedOptimizerStep) {
  Strategy s;
  s.pp = 8;
  s.grad_allreduce = true;
  s.zero = 1;
  EXPECT_EQ(refusal(pro, cm, run, s), "");
  s.zero = 0;
  EXPECT_EQ(refusal(pro, cm, run, s),
            "strategy.grad_allreduce: an all-reduce of the gradients before a sharded step needs zero = 1 (zero = 0)");
  s.zero = 3;
  EXPECT_EQ(refusal(pro, cm, run, s),
            "strategy.grad_allreduce: an all-reduce of the gradients before a sharded step needs zero = 1 (zero = 3)");
}

TEST_F(StrategyCheck, AnUnfusedSoftmaxNeedsTheUnfusedAttentionPath) {
  Strategy s;
  s.pp = 8;
  s.fused_softmax = false;
  EXPECT_EQ(refusal(pro, cm, run, s),
            "strategy.fused_softmax: the softmax kernel choice applies only without FlashAttention (flash_attention = false)");
}

TEST_F(StrategyCheck, SwapNeedsHostFigures) {
  Cluster c = cm;
  c.host_link_bw = 0;
  Strategy s;
  s.pp = 8;
  s.swap_optimizer = true;
  EXPECT_NE(refusal(pro, c, run, s).find("strategy.swap_optimizer"), std::string::npos);
}

// A run or strategy file with a bad field: one line naming file, line and field.
std::string file_error(const std::string& text, bool run) {
  std::string path = (std::filesystem::temp_directory_path() / ("trex-plan-input-" + std::to_string(getpid()) + ".toml")).string();
  std::ofstream(path) << text;
  std::string what;
  try {
    if (run)
      load_run(path);
    else
      load_strategy(path);
  } catch (const InputError& e) {
    what = e.detail() + " @" + std::to_string(e.line());
  }
  std::filesystem::remove(path);
  return what;
}

TEST(PlanInputFiles, EveryShippedRunAndStrategyLoads) {
  int n = 0;
  for (const char* dir : {"configs/run", "configs/strategy"}) {
    for (const auto& e : std::filesystem::directory_iterator(testing::source_path(dir))) {
      SCOPED_TRACE(e.path().string());
      if (std::string(dir) == "configs/run")
        EXPECT_GT(load_run(e.path().string()).seq_len, 0);
      else
        EXPECT_GE(load_strategy(e.path().string()).tp, 1);
      ++n;
    }
  }
  EXPECT_GE(n, 6);
}

TEST(PlanInputFiles, V4FlashOnH200Fits) {
  Cluster c = shipped_cluster("hgx-h200");
  set_nodes(c, 8);
  Prediction p = predict(shipped_model("deepseek-v4-flash"), c, load_run(testing::source_path("configs/run/v4-flash-8k.toml")),
                         load_strategy(testing::source_path("configs/strategy/v4-flash-h200-64.toml")));
  EXPECT_TRUE(p.memory.fits) << p.memory.total();
  EXPECT_GT(p.mfu_of(model::FlopConvention::kTrex), 0.1);
}

TEST(PlanInputFiles, BadRunAndStrategyFieldsAreNamed) {
  EXPECT_EQ(file_error("[run]\nseq_len = 0\nglobal_batch = 8\n", true), "run.seq_len: must be at least 1 @2");
  EXPECT_EQ(file_error("[run]\nseq_len = 8\n", true), "run.global_batch: missing @1");
  EXPECT_EQ(file_error("[run]\nseq_len = 8\nglobal_batch = 8\nmicro_bach = 2\n", true), "run.micro_bach: unknown field @4");
  EXPECT_EQ(file_error("[run]\nseq_len = 8\nglobal_batch = 8\nmatmul_precision = \"fp4\"\n", true),
            "run.matmul_precision: is \"fp4\", expected bf16 or fp8 @4");
  EXPECT_EQ(file_error("[run]\nseq_len = 8\nglobal_batch = 8\nfp8_recipe = \"tensorwise\"\n", true),
            "run.fp8_recipe: is \"tensorwise\", expected delayed, current, mxfp8 or blockwise @4");
  // Gradient bytes up to 6 (a bf16 .grad beside a full fp32 buffer); the reductions move at most 4.
  EXPECT_EQ(file_error("[run]\nseq_len = 8\nglobal_batch = 8\ngrad_bytes = 8\n", true),
            "run.grad_bytes: must be in [2, 6], got 8 @4");
  EXPECT_EQ(file_error("[run]\nseq_len = 8\nglobal_batch = 8\ntied_grad_reduce_bytes = 6\n", true),
            "run.tied_grad_reduce_bytes: must be in [1, 4], got 6 @4");
  EXPECT_EQ(file_error("[run]\nseq_len = 8\nglobal_batch = 8\nlogits_grad_in_place = \"te\"\n", true),
            "run.logits_grad_in_place: must be true or false @4");
  EXPECT_EQ(file_error("[strategy]\ntp = 0\n", false), "strategy.tp: must be at least 1 @2");
  EXPECT_EQ(file_error("[strategy]\nrecompute = \"some\"\n", false),
            "strategy.recompute: is \"some\", expected none, selective, norm-act, moe or full @2");
  EXPECT_EQ(file_error("[strategy]\na2a_overlap = 1.5\n", false), "strategy.a2a_overlap: must be in [0, 1], got 1.5 @2");
  EXPECT_EQ(file_error("[strategy]\nzero = 4\n", false), "strategy.zero: must be 0, 1, 2 or 3 @2");
  EXPECT_EQ(file_error("[strategy]\nmoe_dispatcher = \"nccl\"\n", false),
            "strategy.moe_dispatcher: is \"nccl\", expected alltoall, deepep or hybridep @2");
  EXPECT_EQ(file_error("[strategy]\nmoe_token_drop = \"pad\"\n", false),
            "strategy.moe_token_drop: is \"pad\", expected dropless, drop or drop-and-pad @2");
  EXPECT_EQ(file_error("[strategy]\ntp = 2\n[run]\n", false), "run: unknown table @3");
  EXPECT_EQ(file_error("[strategy\n", false).rfind("", 0), 0u);
  EXPECT_NE(file_error("[strategy\n", false), "");
}

// Bytes per element of an FP8 input cast by recipe (strategy.h): a row-wise and a column-wise
// FP8 copy from one bf16 read (2 + 1 + 1), current scaling's extra amax read (+2), block
// scales of one byte per 32 elements (+1/32).
TEST(PlanInputFiles, Fp8RecipeSetsTheQuantizationTraffic) {
  std::string path = (std::filesystem::temp_directory_path() / ("trex-plan-recipe-" + std::to_string(getpid()) + ".toml")).string();
  auto bytes = [&](const std::string& line) {
    std::ofstream(path) << "[run]\nseq_len = 8\nglobal_batch = 8\nmatmul_precision = \"fp8\"\n" << line;
    return load_run(path).fp8_cast_bytes;
  };
  EXPECT_DOUBLE_EQ(bytes(""), 4);
  EXPECT_DOUBLE_EQ(bytes("fp8_recipe = \"delayed\"\n"), 4);
  EXPECT_DOUBLE_EQ(bytes("fp8_recipe = \"current\"\n"), 6);
  EXPECT_DOUBLE_EQ(bytes("fp8_recipe = \"mxfp8\"\n"), 4.03125);
  EXPECT_DOUBLE_EQ(bytes("fp8_recipe = \"blockwise\"\n"), 4.03125);
  std::filesystem::remove(path);
}

// FSDP weights gathered in FP8 (strategy.h param_gather_bytes; torchao's Float8Linear with
// FSDP2's float8 all-gather, torchtitan's enable_fsdp_float8_all_gather): 1 B an element, only for
// an FP8 run; bf16 (2 B) by default.
TEST(PlanInputFiles, WeightsAreGatheredInFp8OnlyByAnFp8Run) {
  std::string path = (std::filesystem::temp_directory_path() / ("trex-plan-gather-" + std::to_string(getpid()) + ".toml")).string();
  std::ofstream(path) << "[run]\nseq_len = 8\nglobal_batch = 8\n";
  EXPECT_DOUBLE_EQ(load_run(path).param_gather_bytes, 2);
  std::ofstream(path) << "[run]\nseq_len = 8\nglobal_batch = 8\nmatmul_precision = \"fp8\"\nparam_gather_precision = \"fp8\"\n";
  EXPECT_DOUBLE_EQ(load_run(path).param_gather_bytes, 1);
  std::filesystem::remove(path);
  EXPECT_EQ(file_error("[run]\nseq_len = 8\nglobal_batch = 8\nparam_gather_precision = \"fp8\"\n", true).rfind(
                "run.param_gather_precision: fp8 needs matmul_precision", 0),
            0u);
}

TEST_F(StrategyCheck, PredictRefusesBeforePredicting) {
  Strategy s;
  s.tp = 3;
  EXPECT_THROW(predict(pro, cm, run, s), InputError);
}

}  // namespace
}  // namespace trex::plan
