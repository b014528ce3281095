// The mixture: sources drawn in proportion to their weights, every document of a source once per
// epoch, and a restored position continuing the same sequence.
#include "trex/train/mixture.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "test_text.h"

namespace trex::train {
namespace {

using testing::TempDir;

std::vector<Source> three_sources(const TempDir& dir) {
  for (int i = 0; i < 5; ++i) dir.write("a/" + std::to_string(i) + ".txt", "alpha " + std::to_string(i));
  for (int i = 0; i < 3; ++i) dir.write("b/" + std::to_string(i) + ".txt", "beta " + std::to_string(i));
  dir.write("c.jsonl", "{\"text\": \"gamma 0\"}\n{\"text\": \"gamma 1\"}\n");
  std::vector<Source> s;
  s.push_back(Source::load({"a", SourceKind::kText, dir.path("a"), 0.6}));
  s.push_back(Source::load({"b", SourceKind::kText, dir.path("b"), 0.3}));
  s.push_back(Source::load({"c", SourceKind::kCpt, dir.path("c.jsonl"), 0.1}));
  return s;
}

TEST(MixtureTest, ProportionsFollowWeights) {
  TempDir dir("mix");
  std::vector<Source> sources = three_sources(dir);
  Mixture m(&sources, 5);
  const int n = 20000;
  std::vector<int> count(3, 0);
  for (int i = 0; i < n; ++i) ++count[m.next().source];
  // Binomial standard deviation at n = 20000 is at most 0.0035; allow 4 of them.
  EXPECT_NEAR(count[0] / double(n), 0.6, 0.014);
  EXPECT_NEAR(count[1] / double(n), 0.3, 0.014);
  EXPECT_NEAR(count[2] / double(n), 0.1, 0.014);
}

TEST(MixtureTest, EachEpochVisitsEveryDocumentOnce) {
  TempDir dir("mixepoch");
  std::vector<Source> sources;
  for (int i = 0; i < 7; ++i) dir.write("d/" + std::to_string(i) + ".txt", "doc " + std::to_string(i));
  sources.push_back(Source::load({"d", SourceKind::kText, dir.path("d"), 1.0}));
  Mixture m(&sources, 9);
  std::vector<size_t> first, second;
  for (int i = 0; i < 7; ++i) first.push_back(m.next().doc);
  for (int i = 0; i < 7; ++i) second.push_back(m.next().doc);
  std::vector<size_t> a = first, b = second;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(a[i], i);
    EXPECT_EQ(b[i], i);
  }
  EXPECT_NE(first, second);  // reshuffled each epoch (7! orders: equal by chance ~ 0.0002)
}

TEST(MixtureTest, RestoreContinuesTheSameSequence) {
  TempDir dir("mixres");
  std::vector<Source> sources = three_sources(dir);
  Mixture a(&sources, 21);
  for (int i = 0; i < 37; ++i) a.next();
  MixturePosition p = MixturePosition::from_json(nlohmann::json::parse(a.position().to_json().dump()), 3, "x");
  Mixture b(&sources, 21);
  b.restore(p);
  for (int i = 0; i < 100; ++i) {
    DocumentRef x = a.next(), y = b.next();
    ASSERT_EQ(x.source, y.source);
    ASSERT_EQ(x.doc, y.doc);
  }
}

}  // namespace
}  // namespace trex::train
