#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "trex/core/hw_description.h"
#include "trex/util/atomic_file.h"
#include "trex/util/error.h"

namespace trex::core {
namespace {

std::vector<std::string> shipped_files() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(std::string(TREX_SOURCE_DIR) + "/configs/hw"))
    if (e.path().extension() == ".toml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(HwDescription, EveryShippedFileLoads) {
  std::vector<std::string> files = shipped_files();
  ASSERT_GE(files.size(), 3u);
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    HwDescription d = load_hw_description(f);
    EXPECT_FALSE(d.device.name.empty());
    EXPECT_GT(d.peak.flops_bf16.value, 0);
    EXPECT_GT(d.device_memory().bw_read->value, 0);
    EXPECT_FALSE(d.peak.flops_bf16.source.empty());
  }
}

TEST(HwDescription, ShippedFilesCarryTheSpecFigures) {
  std::string dir = std::string(TREX_SOURCE_DIR) + "/configs/hw/";
  HwDescription h200 = load_hw_description(dir + "h200.toml");
  EXPECT_EQ(h200.device.kind, "gpu");
  EXPECT_EQ(h200.peak.flops_bf16.value, 989e12);
  EXPECT_EQ(h200.peak.flops_bf16.confidence, Confidence::kOfficial);
  EXPECT_EQ(h200.device_memory().bw_read->value, 4.8e12);
  EXPECT_EQ(h200.device.clock_hz.confidence, Confidence::kDerived);

  HwDescription ascend = load_hw_description(dir + "ascend-910c.toml");
  EXPECT_EQ(ascend.device.kind, "npu");
  EXPECT_EQ(ascend.peak.flops_bf16.value, 752e12);
  EXPECT_EQ(ascend.device.cores_matrix.value, 48);
  ASSERT_NE(ascend.find_memory("UB"), nullptr);
  EXPECT_EQ(ascend.find_memory("UB")->size_bytes.value, 196608);
  EXPECT_EQ(ascend.peak.flops_fp32.confidence, Confidence::kUncertain);

  HwDescription cm = load_hw_description(dir + "cloudmatrix384.toml");
  ASSERT_TRUE(cm.system.has_value());
  EXPECT_EQ(cm.system->devices.value, 384);
  EXPECT_GE(cm.links.size(), 3u);
  EXPECT_EQ(cm.links[0].efficiency->value, 0.7);
}

TEST(HwDescription, WrittenTomlReadsBackEqual) {
  for (const std::string& f : shipped_files()) {
    SCOPED_TRACE(f);
    HwDescription d = load_hw_description(f);
    std::string text = to_toml(d, "a header\nof two lines");
    EXPECT_EQ(text.rfind("# a header\n# of two lines\n", 0), 0u);
    HwDescription back = parse_hw_description(text, "roundtrip.toml");
    EXPECT_TRUE(back == d) << text;
  }
}

const char* kMinimal = R"(
[device]
source = "test"
confidence = "official"
name = "Test"
kind = "cpu"
clock_hz = 3e9
cores_matrix = 4
cores_vector = 4

[peak]
source = "test"
confidence = "measured"
flops_fp32 = 1e11
flops_bf16 = 1e11

[[memory]]
source = "test"
confidence = "measured"
name = "DRAM"
scope = "device"
size_bytes = 1024
bw_read = 2e10
)";

// An edit of kMinimal (its first `from` becomes `to`) and the error it must cause.
struct BadCase {
  const char* from;
  const char* to;
  const char* expect;  // a piece of the one-line message
  int line;            // the line it should name (0: no line)
};

TEST(HwDescription, MinimalFileLoads) {
  HwDescription d = parse_hw_description(kMinimal, "min.toml");
  EXPECT_EQ(d.device.cores_matrix.value, 4);
  EXPECT_EQ(d.device.clock_hz.source, "test");
  EXPECT_FALSE(d.core.has_value());
}

TEST(HwDescription, BadFilesGiveOneLineErrorsNamingFileAndField) {
  const BadCase cases[] = {
      {"flops_bf16 = 1e11\n", "", "peak.flops_bf16: missing", 11},
      {"flops_fp32 = 1e11", "flops_fp32 = -1e11", "peak.flops_fp32: must be a positive number", 14},
      {"flops_fp32 = 1e11", "flops_fp32 = \"fast\"", "peak.flops_fp32: must be a number", 14},
      {"flops_fp32 = 1e11", "flops_fp32 = nan", "peak.flops_fp32: must be a positive number", 14},
      {"flops_fp32 = 1e11", "flops_fp23 = 1e11", "peak.flops_fp23: unknown field", 14},
      {"kind = \"cpu\"", "kind = \"tpu\"", "device.kind: is \"tpu\", expected cpu, npu or gpu", 6},
      {"cores_matrix = 4", "cores_matrix = 4.5", "device.cores_matrix: must be a whole number", 8},
      {"confidence = \"measured\"", "confidence = \"pretty sure\"", "peak.confidence: is \"pretty sure\"", 13},
      {"source = \"test\"\nconfidence = \"measured\"\nflops",
       "confidence = \"measured\"\nflops", "peak.flops_fp32: has no source", 13},
      {"scope = \"device\"", "scope = \"global\"", "memory[0].scope: is \"global\"", 21},
      {"scope = \"device\"", "scope = \"core\"", "memory: no [[memory]] with scope = \"device\"", 0},
      {"bw_read = 2e10\n", "", "memory[0].bw_read: missing", 0},
      {"name = \"Test\"\n", "", "device.name: missing", 2},
      {"[peak]", "[speed]\nx = 1\n[peak]", "speed: unknown table", 11},
      {"[[memory]]", "[memory]", "memory: must be an array of tables", 17},
      {"clock_hz = 3e9", "clock_hz = 3e9\nclock_hz_confidence = \"sure\"", "device.clock_hz_confidence: is \"sure\"", 8},
      {"clock_hz = 3e9", "clock_hz = 3e9 3", "invalid TOML", 7},
      {"\n[device]", "\n[[link]]\nsource = \"x\"\nconfidence = \"official\"\nlevel = \"a\"\nbw_unidir_bytes_per_s = 1e9\n"
                   "efficiency = 1.5\n[device]",
       "link[0].efficiency: must be in (0, 1]", 7},
  };
  for (const BadCase& c : cases) {
    std::string text = kMinimal;
    size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from;
    text.replace(at, std::string(c.from).size(), c.to);
    SCOPED_TRACE(c.expect);
    try {
      parse_hw_description(text, "configs/hw/bad.toml");
      ADD_FAILURE() << "no error for:\n" << text;
    } catch (const InputError& e) {
      std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_EQ(what.rfind("configs/hw/bad.toml", 0), 0u) << what;
      EXPECT_NE(what.find(c.expect), std::string::npos) << what;
      EXPECT_EQ(e.line(), c.line) << what;
    }
  }
}

TEST(HwDescription, MissingTablesAndFilesAreNamed) {
  try {
    parse_hw_description("[device]\nname = \"x\"\n", "x.toml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("x.toml:1: device.kind: missing"), std::string::npos) << e.what();
  }
  std::string dir = std::filesystem::temp_directory_path() / ("trex_hw_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = dir + "/broken.toml";
  write_file_atomic(path, std::string(kMinimal).replace(std::string(kMinimal).find("[peak]"), 6, "[pea]"));
  try {
    load_hw_description(path);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ":11: pea: unknown table", 0), 0u) << e.what();
  }
  EXPECT_THROW(load_hw_description(dir + "/absent.toml"), InputError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trex::core
