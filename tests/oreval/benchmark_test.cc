// Answer parsing, the generic loader (JSON, JSONL, CSV) and the named benchmarks.
#include "trex/oreval/benchmark.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <vector>
#include <unistd.h>

#include "trex/util/atomic_file.h"
#include "trex/util/data_dir.h"
#include "trex/util/error.h"

namespace trex::oreval {
namespace {

namespace fs = std::filesystem;

// The files temp_file wrote, removed when the test program exits so /tmp does not fill up.
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    std::error_code ec;
    for (const auto& p : paths) fs::remove(p, ec);
  }
};
TempFiles g_temp_files;

std::string temp_file(const std::string& name, const std::string& text) {
  std::string p = (fs::temp_directory_path() / ("trex_oreval_test_" + std::to_string(getpid()) + "_" + name)).string();
  write_file_atomic(p, text);
  g_temp_files.paths.push_back(p);
  return p;
}

TEST(Answer, NumbersAndSentinels) {
  EXPECT_EQ(parse_answer("1,200.5", "a").value, 1200.5);
  EXPECT_EQ(parse_answer(" $30 ", "a").value, 30);
  Answer z = parse_answer("-0.0", "a");
  EXPECT_EQ(z.kind, AnswerKind::kNumber);
  EXPECT_FALSE(std::signbit(z.value));
  EXPECT_EQ(parse_answer("No Best Solution", "a").kind, AnswerKind::kNoSolution);
  EXPECT_EQ(parse_answer("-9999", "a").kind, AnswerKind::kNoSolution);
  EXPECT_EQ(parse_answer("Infeasible", "a").kind, AnswerKind::kInfeasible);
  EXPECT_EQ(parse_answer("unbounded", "a").kind, AnswerKind::kUnbounded);
  EXPECT_EQ(parse_answer("", "a").kind, AnswerKind::kNone);
  try {
    parse_answer("about twelve", "en_answer");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("en_answer"), std::string::npos);
  }
}

TEST(Generic, JsonlJsonCsv) {
  std::string jl = temp_file("a.jsonl", "{\"q\":\"one?\",\"a\":\"1\",\"k\":\"x1\"}\n\n{\"q\":\"two?\",\"a\":2,\"k\":\"x2\"}\n");
  Benchmark b = load_generic(jl, {"k", "q", "a"});
  ASSERT_EQ(b.items.size(), 2u);
  EXPECT_EQ(b.items[1].id, "x2");
  EXPECT_EQ(b.items[1].answer.value, 2);
  std::string js = temp_file("b.json", "[{\"question\":\"q\",\"answer\":null}]");
  Benchmark j = load_generic(js, {});
  ASSERT_EQ(j.items.size(), 1u);
  EXPECT_EQ(j.items[0].id, "1");
  EXPECT_EQ(j.items[0].answer.kind, AnswerKind::kNone);
  std::string csv = temp_file("c.csv", "id,question,answer\n7,\"multi\nline, with \"\"quotes\"\"\",No Best Solution\n8,plain,3.5\n");
  Benchmark c = load_generic(csv, {"id", "question", "answer"});
  ASSERT_EQ(c.items.size(), 2u);
  EXPECT_EQ(c.items[0].question, "multi\nline, with \"quotes\"");
  EXPECT_EQ(c.items[0].answer.kind, AnswerKind::kNoSolution);
  EXPECT_EQ(c.items[1].answer.value, 3.5);
  for (const auto& p : {jl, js, csv}) fs::remove(p);
}

TEST(Generic, ErrorsNameFileAndLine) {
  std::string bad = temp_file("bad.jsonl", "{\"question\":\"q\",\"answer\":1}\n{\"question\":\"q\",\"answer\":\"lots\"}\n");
  try {
    load_generic(bad, {});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:2:"), std::string::npos) << e.what();
  }
  std::string missing = temp_file("missing.jsonl", "{\"text\":\"q\",\"answer\":1}\n");
  EXPECT_THROW(load_generic(missing, {}), InputError);
  EXPECT_THROW(load_generic(temp_file("x.txt", "hi"), {}), InputError);
  EXPECT_THROW(load_benchmark("no-such-benchmark"), InputError);
  for (const auto& p : {bad, missing}) fs::remove(p);
}

// IndustryOR is named but read from the file the user points at. The fixture is written
// here in IndustryOR's shape (JSON lines of en_question/en_answer in a .json file, as
// CardinalOperations/IndustryOR publishes it); no IndustryOR data is in the repository.
TEST(Named, IndustryOrFromTheFileTheUserNames) {
  std::string f = temp_file("IndustryOR.json",
                            "{\"en_question\":\"A plant makes two goods...\",\"en_answer\":\"3050.0\",\"difficulty\":\"Easy\"}\n"
                            "{\"en_question\":\"A route...\",\"en_answer\":\"No Best Solution\",\"difficulty\":\"Hard\"}\n");
  Benchmark b = load_benchmark("industryor=" + f);
  EXPECT_EQ(b.name, "industryor");
  EXPECT_EQ(b.source, f);
  EXPECT_EQ(b.score_by, ScoreBy::kValue);
  EXPECT_FALSE(b.in_overall);
  ASSERT_EQ(b.items.size(), 2u);
  EXPECT_EQ(b.items[0].id, "1");  // line numbers, as in ORLM's output files
  EXPECT_EQ(b.items[0].answer.value, 3050);
  EXPECT_EQ(b.items[1].answer.kind, AnswerKind::kNoSolution);
  bool listed = false;
  for (const auto& nb : named_benchmarks()) listed |= std::string(nb.name) == "industryor";
  EXPECT_TRUE(listed);

  const char* old = std::getenv(kIndustryOrEnv);
  std::string saved = old ? old : "";
  ::setenv(kIndustryOrEnv, f.c_str(), 1);
  EXPECT_EQ(load_benchmark("industryor").items.size(), 2u);
  auto message = [](const std::string& spec) -> std::string {
    try {
      load_benchmark(spec);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  };
  ::setenv(kIndustryOrEnv, (f + ".absent").c_str(), 1);
  EXPECT_EQ(message("industryor"), f + ".absent: IndustryOR data file (from TREX_INDUSTRYOR) does not exist");
  ::unsetenv(kIndustryOrEnv);
  EXPECT_NE(message("industryor").find("industryor: no data file given (set TREX_INDUSTRYOR=FILE"), std::string::npos);
  EXPECT_NE(message("industryor=").find("no file after '='"), std::string::npos);
  std::string dir = fs::temp_directory_path().string();
  EXPECT_EQ(message("industryor=" + dir), dir + ": IndustryOR data file (from --bench industryor=FILE) is not a regular file");
  std::string bad = temp_file("industryor_bad.jsonl", "{\"en_question\":\"q\",\"en_answer\":\"1\"}\n{\"question\":\"q\"}\n");
  EXPECT_NE(message("industryor=" + bad).find("industryor_bad.jsonl:2: no field 'en_question'"), std::string::npos);
  if (old) ::setenv(kIndustryOrEnv, saved.c_str(), 1);
}

TEST(Named, CountsAndFields) {
  if (find_data("or-benchmarks").empty()) GTEST_SKIP() << "benchmark data not found under " << data_dir();
  struct Want {
    const char* name;
    size_t items;
  };
  for (Want w : {Want{"nl4opt", 289}, Want{"optibench", 600}, Want{"b4o-feasible", 344}, Want{"b4o-orgeval", 394},
                 Want{"b4o-orgeval-solver", 212}, Want{"b4o-original", 425}, Want{"mamo-easy", 652},
                 Want{"mamo-complex", 211}, Want{"nlp4lp", 242}}) {
    Benchmark b = load_benchmark(w.name);
    EXPECT_EQ(b.items.size(), w.items) << w.name;
  }
  Benchmark f = load_benchmark("b4o-feasible");
  int with_code = 0;
  for (const Item& it : f.items) {
    EXPECT_TRUE(fs::exists(it.reference_lp)) << it.id;
    EXPECT_TRUE(fs::exists(it.data_path)) << it.id;
    EXPECT_EQ(it.answer.kind, AnswerKind::kNumber);
    with_code += !it.reference_code.empty();
  }
  EXPECT_EQ(with_code, 87);
  EXPECT_EQ(load_benchmark("b4o-orgeval").score_by, ScoreBy::kStructure);
}

}  // namespace
}  // namespace trex::oreval
