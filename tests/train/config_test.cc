// Train configs: the shipped ones load; a misspelt key, a bad value or a missing table is one
// line naming FILE:LINE: field.
#include "trex/train/config.h"
#include "trex/train/dataset.h"

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

// The pieces of a small config: [run] (4 lines) and one [[data]] source.
const std::string kModel = std::string(TREX_SOURCE_DIR) + "/configs/model/v4-nano.toml";
const std::string kHead = "[run]\nmodel = \"" + kModel + "\"\nseq = 128\nsteps = 10\n";
const std::string kData = "\n[[data]]\nkind = \"text\"\npath = \"/usr/share/common-licenses\"\n";

TEST(TrainConfigTest, ErrorsNameFileLineAndField) {
  TempDir dir("cfg");
  const std::string &model = kModel, &head = kHead, &data = kData;
  std::string p = dir.write("typo.toml", head + "\n[optimizer]\nlr = 1e-3\nlrr = 2\n" + data);
  EXPECT_EQ(error_of(p), p + ":8: optimizer.lrr: unknown field");
  p = dir.write("kind.toml", head + "\n[optimizer]\nlr = 1e-3\nkind = \"sgd\"\n" + data);
  EXPECT_NE(error_of(p).find(p + ":8: optimizer.kind:"), std::string::npos) << error_of(p);
  p = dir.write("nodata.toml", head + "\n[optimizer]\nlr = 1e-3\n");
  EXPECT_NE(error_of(p).find("data: no [[data]] source"), std::string::npos) << error_of(p);
  p = dir.write("seq.toml", "[run]\nmodel = \"" + model + "\"\nseq = 1\nsteps = 10\n[optimizer]\nlr = 1e-3\n" + data);
  EXPECT_NE(error_of(p).find(p + ":3: run.seq: must be at least 2"), std::string::npos) << error_of(p);
}

// [optimizer] swap_memory_mb: sets the chunk when swap_chunk is absent; a budget that cannot hold
// swap_slots chunks is refused at load, naming the field and line, before any swap file exists.
TEST(TrainConfigTest, SwapMemoryBudgetSetsOrRefusesTheChunk) {
  TempDir dir("cfg");
  const std::string head = kHead + "\n[optimizer]\nlr = 1e-3\nkind = \"swap\"\n", &data = kData;

  // 3 slots x 12 B x 262144 = 9.4 MB: 10 MB holds them, and 10 MB alone gives the largest
  // 1024-multiple chunk that fits (floor(10e6 / 36) = 277777 -> 277504).
  std::string p = dir.write("fits.toml", head + "swap_chunk = 262144\nswap_memory_mb = 10\n" + data);
  EXPECT_EQ(load_train_config(p).swap_chunk, 262144);
  p = dir.write("derived.toml", head + "swap_memory_mb = 10\n" + data);
  EXPECT_EQ(load_train_config(p).swap_chunk, 277504);
  p = dir.write("two.toml", head + "swap_slots = 2\nswap_memory_mb = 10\n" + data);
  EXPECT_EQ(load_train_config(p).swap_chunk, 415744);  // floor(10e6 / 24) -> 415744

  p = dir.write("small.toml", head + "swap_chunk = 262144\nswap_memory_mb = 9\n" + data);
  EXPECT_EQ(error_of(p), p + ":10: optimizer.swap_memory_mb: 9 MB cannot hold swap_slots = 3 chunks of "
                             "swap_chunk = 262144 elements (9.44 MB); raise it or lower swap_chunk or swap_slots");
  p = dir.write("tiny.toml", head + "swap_memory_mb = 0.01\n" + data);
  EXPECT_EQ(error_of(p), p + ":9: optimizer.swap_memory_mb: 0.01 MB cannot hold swap_slots = 3 chunks of the "
                             "smallest size, 1024 elements (0.0369 MB)");
  p = dir.write("neg.toml", head + "swap_memory_mb = -1\n" + data);
  EXPECT_NE(error_of(p).find(p + ":9: optimizer.swap_memory_mb:"), std::string::npos) << error_of(p);
}

// The clipping option of the overlapped swap update: "current" by default, "previous" taken, any
// other value refused naming the file, line and field.
TEST(TrainConfigTest, ClipWithIsCurrentOrPrevious) {
  TempDir dir("clip");
  const std::string head = kHead + "\n[optimizer]\nlr = 1e-3\nkind = \"swap\"\n", &data = kData;
  EXPECT_EQ(load_train_config(dir.write("default.toml", head + data)).clip_with, "current");
  EXPECT_TRUE(load_train_config(dir.write("default.toml", head + data)).swap_direct) << "O_DIRECT by default";
  EXPECT_EQ(load_train_config(dir.write("prev.toml", head + "clip_with = \"previous\"\n" + data)).clip_with, "previous");
  std::string p = dir.write("bad.toml", head + "clip_with = \"next\"\n" + data);
  EXPECT_NE(error_of(p).find(p + ":9: optimizer.clip_with:"), std::string::npos) << error_of(p);
}

// run.packing is cut (default) or whole; [[tokenizer.data]] lists the tokenizer's own sources
// (default none: [[data]]'s), each checked like a [[data]] table, naming its index.
TEST(TrainConfigTest, PackingAndTokenizerSources) {
  TempDir dir("pack");
  const std::string opt = "\n[optimizer]\nlr = 1e-3\n", &data = kData;
  TrainConfig c = load_train_config(dir.write("default.toml", kHead + opt + data));
  EXPECT_EQ(c.packing, "cut");
  EXPECT_TRUE(c.tokenizer_data.empty());
  EXPECT_EQ(load_train_config(dir.write("whole.toml", kHead + "packing = \"whole\"\n" + opt + data)).packing, "whole");
  EXPECT_EQ(load_train_config(dir.write("ff.toml", kHead + "packing = \"first-fit\"\n" + opt + data)).packing,
            "first-fit");
  std::string p = dir.write("bad.toml", kHead + "packing = \"tight\"\n" + opt + data);
  EXPECT_NE(error_of(p).find(p + ":5: run.packing:"), std::string::npos) << error_of(p);

  const std::string tk = "\n[tokenizer]\n[[tokenizer.data]]\nkind = \"text\"\npath = \"/usr/share/common-licenses\"\n"
                         "[[tokenizer.data]]\nname = \"or\"\nkind = \"cpt\"\npath = \"corpus\"\nweight = 3\n";
  c = load_train_config(dir.write("tok.toml", kHead + opt + tk + data));
  ASSERT_EQ(c.tokenizer_data.size(), 2u);
  EXPECT_EQ(c.tokenizer_data[0].name, "tokenizer.data[0]");
  EXPECT_EQ(c.tokenizer_data[1].kind, SourceKind::kCpt);
  EXPECT_EQ(c.tokenizer_data[1].path, dir.path("corpus"));  // beside the config, like [[data]]'s
  EXPECT_EQ(c.tokenizer_data[1].weight, 3);
  ASSERT_EQ(c.data.size(), 1u);
  EXPECT_TRUE(c.tokenizer.split_digits);
  c = load_train_config(dir.write("digits.toml", kHead + opt + "\n[tokenizer]\nsplit_digits = false\n" + data));
  EXPECT_FALSE(c.tokenizer.split_digits);
  p = dir.write("digitsbad.toml", kHead + opt + "\n[tokenizer]\nsplit_digits = \"no\"\n" + data);
  EXPECT_NE(error_of(p).find(p + ":10: tokenizer.split_digits:"), std::string::npos) << error_of(p);
  c = load_train_config(dir.write("numbers.toml", kHead + opt + "\n[tokenizer]\nnumber_pieces = 1000\n" + data));
  EXPECT_EQ(c.tokenizer.number_pieces, 1000);
  EXPECT_EQ(c.tokenizer.number_digits, 4);
  EXPECT_EQ(load_train_config(dir.write("nd.toml", kHead + opt + "\n[tokenizer]\nnumber_digits = 3\n" + data))
                .tokenizer.number_digits,
            3);
  p = dir.write("numsplit.toml", kHead + opt + "\n[tokenizer]\nsplit_digits = false\nnumber_pieces = 10\n" + data);
  EXPECT_NE(error_of(p).find(p + ":11: tokenizer.number_pieces: needs split_digits = true"), std::string::npos)
      << error_of(p);
  p = dir.write("numneg.toml", kHead + opt + "\n[tokenizer]\nnumber_pieces = -1\n" + data);
  EXPECT_NE(error_of(p).find(p + ":10: tokenizer.number_pieces:"), std::string::npos) << error_of(p);
  p = dir.write("ndbad.toml", kHead + opt + "\n[tokenizer]\nnumber_digits = 10\n" + data);
  EXPECT_NE(error_of(p).find(p + ":10: tokenizer.number_digits: must be 2..9"), std::string::npos) << error_of(p);
  EXPECT_EQ(c.tokenizer.number_slots, 0);
  EXPECT_EQ(load_train_config(dir.write("slots.toml", kHead + opt + "\n[tokenizer]\nnumber_slots = 32\n" + data))
                .tokenizer.number_slots,
            32);
  p = dir.write("slotsbad.toml", kHead + opt + "\n[tokenizer]\nnumber_slots = 10000\n" + data);
  EXPECT_NE(error_of(p).find(p + ":10: tokenizer.number_slots: must be 0..9999"), std::string::npos) << error_of(p);
  p = dir.write("tokbad.toml", kHead + opt + "\n[tokenizer]\n[[tokenizer.data]]\nkind = \"pdf\"\npath = \"x\"\n" + data);
  EXPECT_NE(error_of(p).find(p + ":11: tokenizer.data[0].kind:"), std::string::npos) << error_of(p);

  // A tokenizer taken as is (run.init_from's, or tokenizer.file) has its own slots: number_slots
  // beside it would be ignored (review rslots LOW 5), so it is refused, naming the field.
  p = dir.write("slotsinit.toml", kHead + "init_from = \"runs/base\"\n" + opt + "\n[tokenizer]\nnumber_slots = 32\n" + data);
  EXPECT_NE(error_of(p).find(p + ":11: tokenizer.number_slots: cannot be given with run.init_from"), std::string::npos)
      << error_of(p);
  p = dir.write("slotsfile.toml", kHead + opt + "\n[tokenizer]\nfile = \"tok.model\"\nnumber_slots = 0\n" + data);
  EXPECT_NE(error_of(p).find(p + ":11: tokenizer.number_slots: cannot be given with tokenizer.file"), std::string::npos)
      << error_of(p);
  EXPECT_EQ(load_train_config(dir.write("initnoslots.toml", kHead + "init_from = \"runs/base\"\n" + opt + data)).init_from,
            dir.path("runs/base"));
  // tokenizer.file is used as is: with [[tokenizer.data]] beside it the sources would be ignored.
  p = dir.write("tokfile.toml", kHead + opt + "\n[tokenizer]\nfile = \"tok.json\"\n" + tk.substr(13) + data);
  EXPECT_NE(error_of(p).find(p + ":10: tokenizer.file: cannot be given with [[tokenizer.data]]"), std::string::npos)
      << error_of(p);
}

// A source's errors name its section and index, then its name: "licenses" may be the name of a
// [[data]] and a [[tokenizer.data]] table at once.
TEST(TrainConfigTest, SourceErrorsNameTheSection) {
  TempDir dir("srcname");
  const std::string opt = "\n[optimizer]\nlr = 1e-3\n";
  const std::string missing = dir.path("missing");
  const std::string src = "name = \"licenses\"\nkind = \"text\"\npath = \"" + missing + "\"\n";
  TrainConfig c = load_train_config(
      dir.write("same.toml", kHead + opt + "\n[tokenizer]\n[[tokenizer.data]]\n" + src + "\n[[data]]\n" + src +
                                 "\n[[data]]\nkind = \"text\"\npath = \"" + missing + "\"\n"));
  auto load_error = [](const SourceSpec& s) -> std::string {
    try {
      Source::load(s);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(c.tokenizer_data[0].name, "licenses");  // metrics keep the plain name
  EXPECT_EQ(load_error(c.tokenizer_data[0]), "tokenizer.data[0] (licenses).path: " + missing + " does not exist");
  EXPECT_EQ(load_error(c.data[0]), "data[0] (licenses).path: " + missing + " does not exist");
  EXPECT_EQ(load_error(c.data[1]), "data[1].path: " + missing + " does not exist");
}

}  // namespace
}  // namespace trex::train
