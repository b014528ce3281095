// Every item is isolated: an exception in one (a missing reference LP, data that cannot be
// copied) is that item's runtime-error, and the run goes on. Unbounded models and the lenient
// status mode are classified as scoring.h says.
#include "trex/oreval/evaluate.h"

#include <gtest/gtest.h>

namespace trex::oreval {
namespace {

const char* kLp = "```lp\nMaximize\n obj: 3 x + 2 y\nSubject To\n c1: x + y <= 4\n c2: x + 3 y <= 6\n xb: x <= 3\nEnd\n```";

TEST(Evaluate, AnExceptionIsThatItemsRuntimeError) {
  Benchmark b;
  b.name = "isolation";
  b.score_by = ScoreBy::kStructure;
  b.items.push_back({"missing-reference", "q", {}, "/nonexistent/reference.lp", "", ""});
  b.items.push_back({"no-reference", "q", {}, "", "", ""});
  std::vector<Completion> cs = {{"missing-reference", 0, kLp}, {"no-reference", 0, kLp}};
  EvalOptions o;
  o.jobs = 2;
  std::vector<ItemResult> r = evaluate(b, cs, o);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].error, ErrorClass::kRuntimeError);
  EXPECT_NE(r[0].message.find("reference.lp"), std::string::npos) << r[0].message;
  EXPECT_EQ(r[1].error, ErrorClass::kRuntimeError);
  EXPECT_EQ(r[1].status, "no-reference");

  Benchmark v;
  v.name = "values";
  v.items.push_back({"bad-data", "q", {AnswerKind::kNumber, 11}, "", "/nonexistent/data.json", ""});
  v.items.push_back({"fine", "q", {AnswerKind::kNumber, 11}, "", "", ""});
  std::vector<Completion> py = {{"bad-data", 0, "```python\nprint(1)\n```"}, {"fine", 0, kLp}};
  o.exec.allow_weak_sandbox = true;
  std::vector<ItemResult> rv = evaluate(v, py, o);
  ASSERT_EQ(rv.size(), 2u);
  EXPECT_EQ(rv[0].error, ErrorClass::kRuntimeError);
  EXPECT_NE(rv[0].message.find("data.json"), std::string::npos) << rv[0].message;
  EXPECT_EQ(rv[1].error, ErrorClass::kCorrect) << rv[1].message;
}

TEST(Evaluate, UnboundedModelAgainstANumber) {
  Benchmark b;
  b.name = "unbounded";
  b.items.push_back({"u", "q", {AnswerKind::kNumber, 5}, "", "", ""});
  b.items.push_back({"u-answer", "q", {AnswerKind::kUnbounded, 0}, "", "", ""});
  const char* unbounded = "```lp\nMaximize\n obj: x + y\nSubject To\n c1: x - y <= 4\nEnd\n```";
  std::vector<ItemResult> r = evaluate(b, {{"u", 0, unbounded}, {"u-answer", 0, unbounded}}, EvalOptions{});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].error, ErrorClass::kUnbounded) << r[0].status << " " << r[0].message;
  EXPECT_EQ(r[1].error, ErrorClass::kCorrect) << r[1].status << " " << r[1].message;
}

}  // namespace
}  // namespace trex::oreval
