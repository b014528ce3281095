// Train configs: the shipped ones load; a misspelt key, a bad value or a missing table is one
// line naming FILE:LINE: field.
#include "trex/train/config.h"

#include <gtest/gtest.h>

#include "test_text.h"
#include "trex/util/error.h"

namespace trex::train {
namespace {

using testing::TempDir;

std::string error_of(const std::string& path) {
  try {
    load_train_config(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TrainConfigTest, ShippedConfigsLoad) {
  for (const char* name : {"v4-nano-cpt.toml", "v4-nano-sft.toml", "v4-micro-cpt.toml"}) {
    TrainConfig c = load_train_config(std::string(TREX_SOURCE_DIR) + "/configs/train/" + name);
    EXPECT_GT(c.steps, 0) << name;
    EXPECT_EQ(c.tokenizer.vocab, c.model.vocab) << name;
    EXPECT_FALSE(c.data.empty()) << name;
  }
  TrainConfig sft = load_train_config(std::string(TREX_SOURCE_DIR) + "/configs/train/v4-nano-sft.toml");
  EXPECT_EQ(sft.mode, TrainMode::kSft);
  EXPECT_EQ(sft.data[0].kind, SourceKind::kSft);
  EXPECT_FALSE(sft.data[0].count_all);
}

TEST(TrainConfigTest, ErrorsNameFileLineAndField) {
  TempDir dir("cfg");
  std::string model = std::string(TREX_SOURCE_DIR) + "/configs/model/v4-nano.toml";
  std::string head = "[run]\nmodel = \"" + model + "\"\nseq = 128\nsteps = 10\n";
  std::string data = "\n[[data]]\nkind = \"text\"\npath = \"/usr/share/common-licenses\"\n";
  std::string p = dir.write("typo.toml", head + "\n[optimizer]\nlr = 1e-3\nlrr = 2\n" + data);
  EXPECT_EQ(error_of(p), p + ":8: optimizer.lrr: unknown field");
  p = dir.write("kind.toml", head + "\n[optimizer]\nlr = 1e-3\nkind = \"sgd\"\n" + data);
  EXPECT_NE(error_of(p).find(p + ":8: optimizer.kind:"), std::string::npos) << error_of(p);
  p = dir.write("nodata.toml", head + "\n[optimizer]\nlr = 1e-3\n");
  EXPECT_NE(error_of(p).find("data: no [[data]] source"), std::string::npos) << error_of(p);
  p = dir.write("seq.toml", "[run]\nmodel = \"" + model + "\"\nseq = 1\nsteps = 10\n[optimizer]\nlr = 1e-3\n" + data);
  EXPECT_NE(error_of(p).find(p + ":3: run.seq: must be at least 2"), std::string::npos) << error_of(p);
}

}  // namespace
}  // namespace trex::train
