// The MFU ladder scenario: it loads, every rung is predicted and fits, each rung improves on
// the one before, and the report's figures sit on the first and last rungs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "plan/plan_test_util.h"
#include "trex/plan/ladder.h"
#include "trex/util/error.h"

namespace trex::plan {
namespace {

using testing::source_path;

TEST(Ladder, V4ProScenarioClimbs) {
  Ladder l = load_ladder(source_path("configs/plan/v4-pro-cm384-ladder.toml"));
  ASSERT_EQ(l.rungs.size(), 4u);
  EXPECT_DOUBLE_EQ(l.rungs.front().reported_mfu, 0.1167);
  EXPECT_DOUBLE_EQ(l.rungs.back().reported_mfu, 0.3422);
  std::vector<RungResult> r = run_ladder(l);
  ASSERT_EQ(r.size(), 4u);
  for (size_t i = 0; i < r.size(); ++i) {
    SCOPED_TRACE(r[i].rung.name);
    EXPECT_TRUE(r[i].prediction.memory.fits);
    EXPECT_FALSE(r[i].rung.assumptions.empty());
    if (i > 0) {
      EXPECT_GT(r[i].prediction.mfu_of(l.convention), r[i - 1].prediction.mfu_of(l.convention));
    }
  }
  // Rung 1 may not swap; the kernel rung changes only efficiency factors.
  EXPECT_FALSE(r[1].prediction.strategy.swap_optimizer);
  EXPECT_GT(r[3].rung.efficiency.attention, r[2].rung.efficiency.attention);
  EXPECT_DOUBLE_EQ(r[3].rung.efficiency.matmul, r[2].rung.efficiency.matmul);
}

TEST(Ladder, ShippedBaselineAndOptimizedStrategiesAreTheLadderEnds) {
  Ladder l = load_ladder(source_path("configs/plan/v4-pro-cm384-ladder.toml"));
  std::vector<RungResult> r = run_ladder(l);
  Strategy base = load_strategy(source_path("configs/strategy/v4-pro-cm384-baseline.toml"));
  Strategy opt = load_strategy(source_path("configs/strategy/v4-pro-cm384-optimized.toml"));
  Prediction pb = predict(l.model, l.cluster, l.run, base);
  Prediction po = predict(l.model, l.cluster, l.run, opt);
  EXPECT_TRUE(pb.memory.fits);
  EXPECT_TRUE(po.memory.fits);
  EXPECT_DOUBLE_EQ(pb.time.step, r.front().prediction.time.step);
  EXPECT_DOUBLE_EQ(po.time.step, r[2].prediction.time.step);  // rung 2: same kernels as the cluster file
}

TEST(Ladder, RungWithoutStrategyIsRefused) {
  std::string path = (std::filesystem::temp_directory_path() / "trex-ladder-bad.toml").string();
  {
    std::ofstream(path) << "[ladder]\nname = \"x\"\nsource = \"s\"\nmodel = \"" << source_path("configs/model/v4-nano.toml")
                        << "\"\ncluster = \"" << source_path("configs/cluster/cloudmatrix384.toml") << "\"\nrun = \""
                        << source_path("configs/run/v4-pro-8k.toml") << "\"\n[[rung]]\nname = \"r\"\nassumptions = \"a\"\n";
  }
  try {
    load_ladder(path);
    ADD_FAILURE() << "accepted a rung without a strategy";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("rung.strategy: missing"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace trex::plan
