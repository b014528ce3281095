// The layout check: sizes default and multiply to the world, impossible layouts are refused
// naming the field, and rank coordinates follow rank = etp + ETP (ep + EP edp).
#include "trex/dist/layout.h"

#include <gtest/gtest.h>

#include "trex/util/error.h"

namespace trex::dist {
namespace {

model::ModelConfig tiny_model() {
  model::ModelConfig m;
  m.name = "tiny";
  m.ffn.routed_experts = 4;
  m.ffn.expert_hidden = 64;
  return m;
}

std::string error_of(const LayoutRequest& r, int world, int64_t micro = 4) {
  try {
    resolve_layout(r, world, tiny_model(), micro);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(LayoutTest, DefaultsFillTheWorld) {
  ParallelLayout l = resolve_layout({}, 4, tiny_model(), 4);
  EXPECT_EQ(l.dp, 4);
  EXPECT_EQ(l.ep, 1);
  LayoutRequest r;
  r.ep = 2;
  l = resolve_layout(r, 4, tiny_model(), 4);
  EXPECT_EQ(l.dp, 2);
  EXPECT_EQ(l.ep, 2);
  EXPECT_EQ(l.world(), 4);
  EXPECT_EQ(resolve_layout({}, 1, tiny_model(), 1).world(), 1);
}

TEST(LayoutTest, CoordinatesFoldEtpInsideEpInsideEdp) {
  ParallelLayout l;
  l.dp = 2, l.ep = 2, l.etp = 2;
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(l.rank_of(l.edp_of(r), l.ep_of(r), l.etp_of(r)), r);
  }
  EXPECT_EQ(l.etp_of(5), 1);
  EXPECT_EQ(l.ep_of(5), 0);
  EXPECT_EQ(l.edp_of(5), 1);
}

TEST(LayoutTest, ImpossibleLayoutsNameTheField) {
  LayoutRequest r;
  r.ep = 3;
  r.ep_field = "--ep";
  EXPECT_NE(error_of(r, 3).find("--ep: ep 3 does not divide the 4 routed experts"), std::string::npos) << error_of(r, 3);
  r = {};
  r.dp = 2;
  r.ep = 2;
  EXPECT_NE(error_of(r, 2).find("parallel.ep: dp x ep x etp = 2 x 2 x 1 = 4 is not the world size 2"),
            std::string::npos)
      << error_of(r, 2);
  r = {};
  r.etp = 3;
  EXPECT_NE(error_of(r, 3).find("parallel.etp: etp 3 does not divide the expert width 64"), std::string::npos);
  EXPECT_NE(error_of({}, 2, 3).find("run.micro_batches: 3 micro-batches per step cannot be shared by 2 ranks"),
            std::string::npos);
  r = {};
  r.ep = 2;
  EXPECT_NE(error_of(r, 3).find("parallel.ep: ep x etp = 2 does not divide the world size 3"), std::string::npos);
  r = {};
  r.dp = -1;
  EXPECT_NE(error_of(r, 1).find("parallel.dp: must be >= 1"), std::string::npos);
}

TEST(LayoutTest, DescribeNamesEveryFactor) {
  LayoutRequest r;
  r.ep = 2;
  EXPECT_EQ(resolve_layout(r, 4, tiny_model(), 4).describe(tiny_model()),
            "4 ranks: dense data-parallel over 4; experts edp 2 x ep 2 x etp 1 (2 of 4 routed experts per rank)");
  r.etp = 2;
  EXPECT_EQ(resolve_layout(r, 4, tiny_model(), 4).describe(tiny_model()),
            "4 ranks: dense data-parallel over 4; experts edp 1 x ep 2 x etp 2 (2 of 4 routed experts per rank, "
            "32 of each one's 64 columns: bit for bit like one process)");
  // The tiny model's 64 columns are 2 width blocks (model/moe.h): etp 4 cannot follow them.
  r.ep = 1;
  r.etp = 4;
  EXPECT_EQ(resolve_layout(r, 4, tiny_model(), 4).describe(tiny_model()),
            "4 ranks: dense data-parallel over 4; experts edp 1 x ep 1 x etp 4 (4 of 4 routed experts per rank, "
            "16 of each one's 64 columns: like one process up to rounding (etp does not divide the 2 width blocks))");
}

}  // namespace
}  // namespace trex::dist
