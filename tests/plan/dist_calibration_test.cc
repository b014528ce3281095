// The reader of bench/dist_bench's collective fit: a good file, and one error per defect
// naming the field.
#include "trex/plan/dist_calibration.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "trex/util/error.h"

namespace trex::plan {
namespace {

constexpr const char* kGood = R"(
[dist_calibration]
ranks = 2
host = "box"
load = 1.5

[dist_calibration.all_to_all]
latency_s = 2.0e-06
bandwidth_Bps = 4.0e+09

[dist_calibration.all_reduce]
latency_s = 3.0e-06
bandwidth_Bps = 2.0e+09

[dist_calibration.all_gather]
latency_s = 1.0e-06
bandwidth_Bps = 5.0e+09
)";

std::string write(const std::string& name, const std::string& text) {
  std::string p = (std::filesystem::temp_directory_path() /
                   ("trex-dist-cal-" + std::to_string(::getpid()) + "-" + name)).string();
  std::ofstream(p) << text;
  return p;
}

// kGood read from a file of its own (removed again); `path` gets the name it had.
DistCalibration read_good(const std::string& name, std::string* path = nullptr) {
  std::string p = write(name, kGood);
  DistCalibration c = load_dist_calibration(p);
  std::filesystem::remove(p);
  if (path != nullptr) *path = p;
  return c;
}

std::string error_of(const std::string& text) {
  std::string p = write("bad.toml", text);
  try {
    load_dist_calibration(p);
  } catch (const InputError& e) {
    std::filesystem::remove(p);
    return e.what();
  }
  std::filesystem::remove(p);
  return "";
}

TEST(DistCalibration, ReadsEveryFit) {
  DistCalibration c = read_good("good.toml");
  EXPECT_EQ(c.ranks, 2);
  EXPECT_EQ(c.host, "box");
  EXPECT_DOUBLE_EQ(c.all_to_all.latency_s, 2e-6);
  EXPECT_DOUBLE_EQ(c.all_reduce.bandwidth_Bps, 2e9);
  EXPECT_DOUBLE_EQ(c.all_gather.seconds(5e9), 1 + 1e-6);
}

TEST(DistCalibration, DefectsNameTheField) {
  std::string g = kGood;
  EXPECT_NE(error_of("[other]\n").find("dist_calibration"), std::string::npos);
  std::string no_a2a = g.substr(0, g.find("[dist_calibration.all_to_all]")) + g.substr(g.find("[dist_calibration.all_reduce]"));
  EXPECT_NE(error_of(no_a2a).find("dist_calibration.all_to_all"), std::string::npos) << error_of(no_a2a);
  std::string zero_bw = g;
  zero_bw.replace(zero_bw.find("4.0e+09"), 7, "0");
  EXPECT_NE(error_of(zero_bw).find("dist_calibration.all_to_all.bandwidth_Bps"), std::string::npos) << error_of(zero_bw);
  std::string typo = g + "\n[dist_calibration.all_to_al]\nlatency_s = 1\n";
  EXPECT_NE(error_of(typo).find("all_to_al"), std::string::npos) << error_of(typo);
}

// The fit replaces the link level that the measured ranks shared, and no other.
TEST(DistCalibration, SetsTheInnermostLevelThatHoldsTheRanks) {
  DistCalibration d = read_good("links.toml");
  Cluster c;
  c.name = "two levels";
  c.links = {LinkLevel{"one socket", 1, 1e9, 1e-7, 0.5, "x"}, LinkLevel{"node", 8, 2e11, 5e-6, 0.8, "y"},
             LinkLevel{"fabric", 64, 5e10, 1e-5, 0.9, "z"}};
  calibrate_links_from_dist(c, d);
  EXPECT_DOUBLE_EQ(c.links[0].bw_unidir, 1e9);  // a level of 1 cannot hold 2 ranks
  EXPECT_DOUBLE_EQ(c.links[1].latency_s, 2e-6);
  EXPECT_DOUBLE_EQ(c.links[1].bw_unidir, 4e9);
  EXPECT_DOUBLE_EQ(c.links[1].efficiency, 1);
  EXPECT_NE(c.links[1].source.find("dist_bench"), std::string::npos);
  EXPECT_DOUBLE_EQ(c.links[2].bw_unidir, 5e10);
  EXPECT_DOUBLE_EQ(c.links[2].latency_s, 1e-5);
}

TEST(DistCalibration, RefusesAClusterWithoutALevelForTheRanks) {
  std::string p;
  DistCalibration d = read_good("nolink.toml", &p);
  Cluster one;
  one.name = "one device";
  try {
    calibrate_links_from_dist(one, d);
    ADD_FAILURE() << "a cluster without links was calibrated";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("dist_calibration.ranks"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trex::plan
