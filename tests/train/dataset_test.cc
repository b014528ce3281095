// Sources: files in sorted order, `trex data` output directories, globs, non-text files
// skipped, and one-line FILE:LINE errors for malformed JSONL.
#include "trex/train/dataset.h"

#include <gtest/gtest.h>

#include "test_text.h"
#include "trex/util/error.h"
#include "trex/util/zstd_file.h"

namespace trex::train {
namespace {

using testing::TempDir;

std::string error_of(const SourceSpec& spec) {
  try {
    Source::load(spec);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(DatasetTest, CorruptJsonlLineIsNamed) {
  TempDir dir("dsbad");
  std::string good = "{\"text\": \"fine\"}\n";
  std::string p = dir.write("bad.jsonl", good + good + "{\"text\": \"cut off\n" + good);
  EXPECT_EQ(error_of({"cpt", SourceKind::kCpt, p, 1}), p + ":3: not a JSON object (malformed JSON)");
  p = dir.write("notext.jsonl", good + "{\"body\": \"x\"}\n");
  EXPECT_EQ(error_of({"cpt", SourceKind::kCpt, p, 1}), p + ":2: no \"text\" field");
  p = dir.write("role.jsonl", "{\"messages\": [{\"role\": \"robot\", \"content\": \"hi\"}]}\n");
  EXPECT_EQ(error_of({"sft", SourceKind::kSft, p, 1}),
            p + ":1: messages[0]: unknown role \"robot\" (system, user or assistant)");
  p = dir.write("noasst.jsonl", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n");
  EXPECT_EQ(error_of({"sft", SourceKind::kSft, p, 1}), p + ":1: no assistant message (nothing for the SFT loss)");
  p = dir.write("content.jsonl", "{\"messages\": [{\"role\": \"user\", \"content\": 3}]}\n");
  EXPECT_EQ(error_of({"sft", SourceKind::kSft, p, 1}), p + ":1: messages[0]: \"content\" must be a string");
  EXPECT_NE(error_of({"x", SourceKind::kText, dir.path("missing"), 1}).find("does not exist"), std::string::npos);
}

TEST(DatasetTest, ZstdCompressedCorpusPartsAreReadAsText) {
  // `trex data gen` writes cpt/part-BBBBB.jsonl.zst by default; a directory holds both forms.
  TempDir dir("dszst");
  std::string plain = "{\"text\": \"one\"}\n", packed = "{\"text\": \"two\"}\n{\"text\": \"three\"}\n";
  dir.write("corpus/cpt/part-00000.jsonl", plain);
  dir.write("corpus/cpt/part-00001.jsonl.zst", zstd_compress(packed, 3));
  Source s = Source::load({"cpt", SourceKind::kCpt, dir.path("corpus"), 1});
  EXPECT_EQ(s.size(), 3u);
  // A cut-off frame is an error naming the file, never text.
  std::string cut = zstd_compress(packed, 3);
  std::string p = dir.write("bad/cpt/part-00000.jsonl.zst", cut.substr(0, cut.size() - 3));
  EXPECT_NE(error_of({"cpt", SourceKind::kCpt, dir.path("bad"), 1}).find(p), std::string::npos);
}

TEST(DatasetTest, DataOutputDirectoryAndGlobs) {
  TempDir dir("dsdir");
  // The layout `trex data gen` writes: cpt/ and sft/ views beside data/.
  dir.write("corpus/cpt/part-00001.jsonl", "{\"id\": \"b\", \"text\": \"second\"}\n");
  dir.write("corpus/cpt/part-00000.jsonl", "{\"id\": \"a\", \"text\": \"first\"}\n");
  dir.write("corpus/sft/part-00000.jsonl", testing::sft_jsonl(3));
  dir.write("corpus/data/part-00000.jsonl", "{\"not\": \"read\"}\n");
  Source cpt = Source::load({"cpt", SourceKind::kCpt, dir.path("corpus"), 1});
  ASSERT_EQ(cpt.size(), 2u);
  EXPECT_EQ(cpt.text(0), "first");  // sorted by path
  Source sft = Source::load({"sft", SourceKind::kSft, dir.path("corpus"), 1});
  EXPECT_EQ(sft.size(), 3u);

  dir.write("docs/x/copyright", "x license");
  dir.write("docs/y/copyright", "y license");
  dir.write("docs/y/binary", std::string("a\0b", 3));
  Source g = Source::load({"g", SourceKind::kText, dir.path("docs/*/copyright"), 1});
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g.text(1), "y license");
  Source all = Source::load({"all", SourceKind::kText, dir.path("docs"), 1});
  EXPECT_EQ(all.size(), 2u);
  EXPECT_EQ(all.skipped_files(), 1);
}

}  // namespace
}  // namespace trex::train
