// Cluster descriptions: shipped files load; impossible clusters are refused with the reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "plan/plan_test_util.h"
#include "trex/plan/collectives.h"
#include "trex/plan/stack.h"
#include "trex/util/error.h"

namespace trex::plan {
namespace {

using testing::shipped_cluster;
using testing::source_path;

TEST(Cluster, EveryShippedClusterLoads) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(source_path("configs/cluster"))) {
    SCOPED_TRACE(e.path().string());
    Cluster c = load_cluster(e.path().string());
    EXPECT_GT(c.devices(), 0);
    EXPECT_GT(c.peak_flops, 0);
    EXPECT_GT(c.hbm_bw, 0);
    EXPECT_FALSE(c.eff.source.empty());
    EXPECT_GE(c.links.back().group_size, c.devices());
    ++n;
  }
  EXPECT_GE(n, 4);
}

TEST(Cluster, CloudMatrixCarriesTheSpecFigures) {
  Cluster c = shipped_cluster("cloudmatrix384");
  EXPECT_EQ(c.devices(), 384);
  EXPECT_DOUBLE_EQ(c.peak_flops, 752e12);
  EXPECT_DOUBLE_EQ(c.hbm_bytes, 128e9);
  EXPECT_DOUBLE_EQ(c.eff.matmul, 0.7);
  EXPECT_EQ(c.level_for_extent(8).name, "UB within node (1-level Clos)");
  EXPECT_EQ(c.level_for_extent(9).name, "UB across nodes (2-level Clos)");
  EXPECT_EQ(c.level_for_extent(384).name, "UB across nodes (2-level Clos)");
}

// Writes `text` to a temporary cluster file; "HW/" stands for the shipped configs/hw/.
class TempCluster {
 public:
  explicit TempCluster(std::string text) {
    size_t at = text.find("HW/");
    if (at != std::string::npos) text.replace(at, 3, source_path("configs/hw/"));
    path_ = (std::filesystem::temp_directory_path() /
             ("trex-cluster-test-" + std::to_string(getpid()) + "-" + std::to_string(counter_++) + ".toml"))
                .string();
    std::ofstream(path_) << text;
  }
  ~TempCluster() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  static inline int counter_ = 0;
};

const char* kGood = R"([cluster]
name = "t"
source = "test"
device = "HW/h200.toml"
nodes = 4
devices_per_node = 8
[efficiency]
source = "test"
[[link]]
level = "nv"
group_size = 8
bw_unidir_bytes_per_s = 400e9
source = "test"
[[link]]
level = "ib"
group_size = 32
bw_unidir_bytes_per_s = 50e9
source = "test"
)";

std::string error_of(const std::string& text) {
  TempCluster t(text);
  try {
    load_cluster(t.path());
  } catch (const InputError& e) {
    return e.detail();
  }
  return "";
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(Cluster, MinimalClusterLoads) { EXPECT_EQ(error_of(kGood), ""); }

TEST(Cluster, ImpossibleClustersAreRefused) {
  EXPECT_EQ(error_of(replace(kGood, "nodes = 4", "nodes = 5")),
            "link: the outermost level \"ib\" joins 32 devices but the cluster has 40 (some devices could not reach each other)");
  EXPECT_EQ(error_of(replace(kGood, "group_size = 32", "group_size = 12")),
            "link: level \"ib\" group_size 12 must be a larger multiple of the level inside it (8)");
  EXPECT_EQ(error_of(replace(kGood, "nodes = 4", "nodes = 0")), "cluster.nodes: must be at least 1");
  EXPECT_NE(error_of(replace(kGood, "HW/h200.toml", "HW/none.toml")).find("cluster.device"), std::string::npos);
  EXPECT_EQ(error_of(replace(kGood, "name = \"t\"", "name = \"t\"\nreserved_bytes = 500e9")),
            "cluster.reserved_bytes: not below the device memory");
  EXPECT_EQ(error_of(replace(kGood, "bw_unidir_bytes_per_s = 50e9", "bw_unidir_bytes_per_s = -1")),
            "link.bw_unidir_bytes_per_s: must be in [1000, 1e+15], got -1");
  EXPECT_EQ(error_of(replace(kGood, "[[link]]\nlevel = \"nv\"", "[[link]]\nlevl = \"nv\"")), "link.level: missing");
  EXPECT_NE(error_of(replace(kGood, "name = \"t\"", "name = \"t\"\nhost_link_bytes_per_s = 1e9")).find("host_source"),
            std::string::npos);
}

// A dispatcher's measured rates: a named dispatcher, its rank and SM counts, three rates and a
// source; anything else is refused with the field named.
TEST(Cluster, EpDispatcherMeasurementsNeedEveryFieldAndASource) {
  const std::string ok = "\n[[ep_dispatcher]]\ndispatcher = \"hybridep\"\nranks = 8\nsms = 32\n"
                         "dispatch_bytes_per_s = 545.71e9\ndispatch_fp8_bytes_per_s = 455.35e9\n"
                         "combine_bytes_per_s = 568.94e9\nsource = \"README_Hybrid-EP.md\"\n";
  EXPECT_EQ(error_of(kGood + ok), "");
  EXPECT_EQ(error_of(kGood + replace(ok, "\"hybridep\"", "\"nccl\"")),
            "ep_dispatcher.dispatcher: is \"nccl\", expected deepep or hybridep");
  EXPECT_EQ(error_of(kGood + replace(ok, "ranks = 8", "ranks = 1")), "ep_dispatcher.ranks: must be at least 2");
  EXPECT_EQ(error_of(kGood + replace(ok, "combine_bytes_per_s = 568.94e9\n", "")),
            "ep_dispatcher.combine_bytes_per_s: missing");
  EXPECT_EQ(error_of(kGood + replace(ok, "source = \"README_Hybrid-EP.md\"\n", "")), "ep_dispatcher.source: missing");
  EXPECT_NE(error_of(kGood + replace(ok, "dispatch_bytes_per_s = 545.71e9", "dispatch_bytes_per_s = 0")).find(
                "ep_dispatcher.dispatch_bytes_per_s"),
            std::string::npos);
  EXPECT_NE(error_of(kGood + replace(ok, "sms = 32", "sms = 32\nspeed = 1")).find("ep_dispatcher"), std::string::npos);
  // Two measurements of one dispatcher at one rank count (e.g. two SM counts): the file must choose.
  EXPECT_EQ(error_of(kGood + ok + replace(ok, "sms = 32", "sms = 24")),
            "ep_dispatcher.ranks: hybridep at 8 ranks given twice (one measurement per dispatcher and rank count)");
  EXPECT_EQ(error_of(kGood + ok + replace(ok, "ranks = 8", "ranks = 16")), "");
}

// The tile set of tile and wave quantization: rows, columns pairs with a source.
TEST(Cluster, GemmTilesArePairsWithASource) {
  const std::string eff = "[efficiency]\nsource = \"test\"";
  EXPECT_EQ(error_of(replace(kGood, eff, eff + "\ngemm_tiles = [256, 128, 128, 128]\ngemm_tile_source = \"guide\"")), "");
  EXPECT_EQ(error_of(replace(kGood, eff, eff + "\ngemm_tiles = [256, 128, 128]\ngemm_tile_source = \"guide\"")),
            "efficiency.gemm_tiles: needs rows, columns pairs (e.g. [256, 128, 128, 128])");
  EXPECT_EQ(error_of(replace(kGood, eff, eff + "\ngemm_tiles = [256, 128]")),
            "efficiency.gemm_tile_source: missing (the tile set needs a source)");
  EXPECT_NE(error_of(replace(kGood, eff, eff + "\ngemm_tiles = [256, 0]\ngemm_tile_source = \"guide\"")).find("gemm_tiles"),
            std::string::npos);
}

// The inner dimension's half dimension refines the shape curve: it needs the curve itself.
TEST(Cluster, GemmHalfDimKNeedsTheShapeCurve) {
  const std::string eff = "[efficiency]\nsource = \"test\"";
  EXPECT_EQ(error_of(replace(kGood, eff, eff + "\ngemm_half_dim_k = 768")),
            "efficiency.gemm_half_dim_k: needs gemm_half_dim (the curve of m and n)");
  EXPECT_EQ(error_of(replace(kGood, eff, eff + "\ngemm_half_dim = 384\ngemm_half_dim_k = 768\ngemm_source = \"DeepGEMM\"")), "");
  EXPECT_NE(error_of(replace(kGood, eff, eff + "\ngemm_half_dim = 384\ngemm_half_dim_k = -1\ngemm_source = \"DeepGEMM\""))
                .find("gemm_half_dim_k"),
            std::string::npos);
}

// The misaligned-GEMM rate belongs to the software stack (a library's behaviour observed on one
// stack, review rplan3), not to the cluster: a cluster file that states it is refused, and a
// stack file states it with a source.
TEST(Cluster, TheMisalignedGemmRateIsAStackFieldWithASource) {
  const std::string eff = "[efficiency]\nsource = \"test\"";
  EXPECT_NE(error_of(replace(kGood, eff, eff + "\ntensor_core_align_bytes = 16\ntensor_core_align_source = \"x\""))
                .find("tensor_core_align_bytes"),
            std::string::npos);
  const std::string stack = "[stack]\nname = \"s\"\nsource = \"test\"\n";
  TempCluster good(stack + "tensor_core_align_bytes = 16\ntensor_core_align_source = \"observed\"\n");
  EXPECT_EQ(load_stack(good.path()).tensor_core_align_bytes, 16);
  EXPECT_EQ(load_stack(good.path()).tensor_core_align_source, "observed");
  TempCluster unsourced(stack + "tensor_core_align_bytes = 16\n");
  try {
    load_stack(unsourced.path());
    ADD_FAILURE() << "an unsourced rate was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("stack.tensor_core_align_source: missing"), std::string::npos) << e.what();
  }
  TempCluster stray(stack + "tensor_core_align_source = \"observed\"\n");  // a source with no rate
  try {
    load_stack(stray.path());
    ADD_FAILURE() << "a source without its rate was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("stack.tensor_core_align_source: given without"), std::string::npos) << e.what();
  }
  TempCluster too_wide(stack + "tensor_core_align_bytes = 512\ntensor_core_align_source = \"x\"\n");
  EXPECT_THROW(load_stack(too_wide.path()), InputError);
  TempCluster fractional(stack + "vocab_divisible_by = 1.5\n");
  EXPECT_THROW(load_stack(fractional.path()), InputError);
}

// vocab_divisible_by has an upper bound (review rfix LOW 7): 10^8 x TP 32 would overflow the
// padded vocabulary (an int) and run the step on a garbage vocabulary. The file is refused with
// the field named; a Strategy built in code that skips load_stack is refused by padded_vocab.
TEST(Cluster, VocabPaddingIsBounded) {
  const std::string stack = "[stack]\nname = \"s\"\nsource = \"test\"\n";
  TempCluster largest(stack + "vocab_divisible_by = 65536\n");
  EXPECT_EQ(load_stack(largest.path()).vocab_divisible_by, 65536);
  TempCluster huge(stack + "vocab_divisible_by = 100000000\n");
  try {
    load_stack(huge.path());
    ADD_FAILURE() << "vocab_divisible_by = 10^8 was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("stack.vocab_divisible_by: at most 65536, got 100000000"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(padded_vocab(50257, 100000000, 32), InputError);
  // 65536 x TP 65536 = 2^32: the first multiple above 50257 is beyond an int. TP causes it (65536
  // alone pads to 65536), so the error names TP.
  try {
    padded_vocab(50257, 65536, 65536);
    ADD_FAILURE() << "65536 x TP 65536 was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("strategy.tp: TP 65536 x vocab_divisible_by 65536 pads the vocabulary of 50257"),
              std::string::npos)
        << e.what();
  }
  // A vocabulary the stack's multiple alone pads beyond an int: the error names the stack field.
  try {
    padded_vocab(2147483000L, 65536, 1);
    ADD_FAILURE() << "a padded vocabulary beyond 2^31 - 1 was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("stack.vocab_divisible_by: 65536 x TP 1 pads"), std::string::npos) << e.what();
  }
  // 65536 x TP 32768 = 2^31 is itself beyond INT_MAX (2^31 - 1).
  EXPECT_THROW(padded_vocab(50257, 65536, 32768), InputError);
  // 65536 x TP 16384 = 2^30 still fits.
  EXPECT_EQ(padded_vocab(50257, 65536, 16384), 1L << 30);
}

TEST(Cluster, SetNodesChecksReach) {
  TempCluster t(kGood);
  Cluster c = load_cluster(t.path());
  set_nodes(c, 2);
  EXPECT_EQ(c.devices(), 16);
  EXPECT_THROW(set_nodes(c, 8), InputError);
}

TEST(Collectives, AlphaBetaFormulas) {
  TempCluster t(replace(replace(kGood, "[efficiency]\nsource = \"test\"", "[efficiency]\nsource = \"test\"\ncomm_launch_s = 0"),
                        "group_size = 8\n", "group_size = 8\nlatency_s = 1e-6\n"));
  Cluster c = load_cluster(t.path());
  double S = 1e9;
  // Ring all-reduce over 8 ranks inside the node: 2 (g-1) alpha + 2 (g-1)/g S / B.
  EXPECT_NEAR(all_reduce_s(c, 8, 8, S), 2 * 7 * 1e-6 + 2 * 7.0 / 8 * S / 400e9, 1e-12);
  EXPECT_NEAR(all_gather_s(c, 8, 8, S), 7 * 1e-6 + 7.0 / 8 * S / 400e9, 1e-12);
  // Across nodes the outer level is the bottleneck.
  EXPECT_NEAR(all_gather_s(c, 4, 32, S), 3.0 / 4 * S / 50e9, 1e-12);
  EXPECT_NEAR(p2p_s(c, 16, S), S / 50e9, 1e-12);
  EXPECT_EQ(all_reduce_s(c, 1, 1, S), 0);
  // All-to-all over 16 ranks with stride 1: 7 of 16 peers inside the node, 8 outside; the
  // outer share (8/16 of S at 50 GB/s) is slower than the inner one.
  EXPECT_NEAR(all_to_all_s(c, 16, 1, S), 8.0 / 16 * S / 50e9, 1e-12);
  EXPECT_NEAR(all_to_all_s(c, 8, 1, S), 7.0 / 8 * S / 400e9 + 7 * 1e-6, 1e-12);
}

}  // namespace
}  // namespace trex::plan

namespace trex::plan {
namespace {

TEST(SingleDevice, ClusterFromAHardwareDescription) {
  Cluster c = cluster_from_device(source_path("configs/hw/h200.toml"));
  EXPECT_EQ(c.devices(), 1);
  EXPECT_DOUBLE_EQ(c.peak_flops, 989e12);
  EXPECT_EQ(load_cluster_or_device(source_path("configs/hw/h200.toml")).devices(), 1);
  EXPECT_EQ(load_cluster_or_device(source_path("configs/cluster/cloudmatrix384.toml")).devices(), 384);
}

TEST(SingleDevice, CalibrationFromKernelsBenchJson) {
  Cluster c = cluster_from_device(source_path("configs/hw/h200.toml"));
  std::string path = (std::filesystem::temp_directory_path() / ("trex-kb-" + std::to_string(getpid()) + ".json")).string();
  std::ofstream(path) << R"({"context":{"peak_flops_fp32":400e9,"triad_bytes_per_s":40e9},"results":[
    {"kernel":"gemm","valid":true,"gflop_per_s":300,"gb_per_s":1,"bound":"compute"},
    {"kernel":"sparse_attention.fwd","valid":true,"gflop_per_s":100,"gb_per_s":5,"bound":"compute"},
    {"kernel":"rmsnorm.fwd","valid":true,"gflop_per_s":1,"gb_per_s":30,"bound":"memory"},
    {"kernel":"swiglu.fwd","valid":true,"gflop_per_s":1,"gb_per_s":20,"bound":"memory"},
    {"kernel":"rope.fwd","valid":true,"gflop_per_s":1,"gb_per_s":36,"bound":"memory"},
    {"kernel":"broken","valid":false,"problem":"x"}]})";
  calibrate_from_kernels_bench(c, path);
  EXPECT_DOUBLE_EQ(c.eff.matmul, 0.75);
  EXPECT_DOUBLE_EQ(c.eff.attention, 0.25);
  EXPECT_DOUBLE_EQ(c.eff.memory, 0.75);  // median of 0.5, 0.75, 0.9
  EXPECT_NE(c.eff.source.find("measured"), std::string::npos);
  std::ofstream(path) << R"({"context":{},"results":[]})";
  EXPECT_THROW(calibrate_from_kernels_bench(c, path), InputError);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace trex::plan
