// bench/recipe_quote_docs.py (issue 16, session 17 pilot): a statement-data corpus becomes
// conversations whose data block quotes the statement before each `name = number` line (the quotes
// together are the statement's text in order, each ending with its line's number); --program keeps
// the whole program and the program question; a corpus without data blocks, or no corpus, is one
// line and exit 2 with nothing written.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

#include "nlohmann/json.hpp"
#include "util/temp_dir.h"
#include "trex/util/subprocess.h"

namespace trex::recipe {
namespace {

using test_util::TempDir;

ProcessResult quote_docs(const std::string& corpus, const std::string& out, bool program) {
  std::vector<std::string> args = {"/usr/bin/python3", std::string(TREX_SOURCE_DIR) + "/bench/recipe_quote_docs.py",
                                   "--sft", corpus, "--out", out};
  if (program) args.push_back("--program");
  return run_process(args);
}

ProcessResult gen(const std::string& out, bool statement_data) {
  std::vector<std::string> args = {"data", "gen", "--config", std::string(TREX_SOURCE_DIR) + "/configs/recipe/mini-data.toml",
                                   "--count", "12", "--seed", "3", "--out", out, "--quiet"};
  // Explicit either way: mini-data.toml itself asks for statement-data programs since session 20.
  args.insert(args.end(), {"--program-style", statement_data ? "statement-data" : "plain"});
  return test_util::run_trex(args);
}

std::vector<nlohmann::json> rows(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line)["messages"]);
  return out;
}

// The quotes of one answer, joined, are a prefix of the statement (line breaks as spaces), and each
// assignment's number ends the quote before it.
void expect_quoted(const std::string& user, const std::string& answer) {
  const std::string header = "# Data, quoted from the statement\n";
  size_t at = answer.find(header);
  ASSERT_NE(at, std::string::npos) << answer;
  at += header.size();
  std::string statement = user;
  std::replace(statement.begin(), statement.end(), '\n', ' ');
  const std::regex pair(R"(# ([^\n]*)\n([a-z_][a-z0-9_]*) = ([0-9]+(\.[0-9]+)?)\n)");
  std::string joined;
  int numbers = 0;
  std::smatch m;
  std::string rest = answer.substr(at);
  while (std::regex_search(rest, m, pair, std::regex_constants::match_continuous)) {
    const std::string quote = m[1], number = m[3];
    ASSERT_GE(quote.size(), number.size());
    EXPECT_EQ(quote.substr(quote.size() - number.size()), number) << quote;
    joined += quote;
    ++numbers;
    rest = m.suffix();
  }
  EXPECT_GE(numbers, 3) << answer;
  EXPECT_EQ(statement.rfind(joined, 0), 0u) << joined << "\n---\n" << statement;
}

TEST(QuoteDocs, EachNumberFollowsItsQuoteAndTheQuotesAreTheStatementInOrder) {
  if (!program_available("/usr/bin/python3") || !program_available("/usr/bin/zstdcat"))
    GTEST_SKIP() << "/usr/bin/python3 or /usr/bin/zstdcat not installed";
  TempDir d("quote_docs");
  ASSERT_EQ(gen(d.path + "/sd", true).exit_code, 0);
  ProcessResult r = quote_docs(d.path + "/sd", d.path + "/docs.jsonl", false);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto docs = rows(d.path + "/docs.jsonl");
  ASSERT_EQ(docs.size(), 12u);
  for (const auto& m : docs) {
    std::string user = m[0]["content"], answer = m[1]["content"];
    EXPECT_EQ(user.find("gurobipy"), std::string::npos);
    ASSERT_EQ(answer.rfind("```python\n# Data, quoted from the statement\n", 0), 0u) << answer;
    EXPECT_EQ(answer.substr(answer.size() - 4), "\n```");
    expect_quoted(user, answer);
  }
  // --program: the corpus row's question and whole program, the data block quoted.
  r = quote_docs(d.path + "/sd", d.path + "/programs.jsonl", true);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto programs = rows(d.path + "/programs.jsonl");
  ASSERT_EQ(programs.size(), 12u);
  for (const auto& m : programs) {
    std::string user = m[0]["content"], answer = m[1]["content"];
    const std::string question = "Write a Python program using gurobipy that solves it.";
    ASSERT_EQ(user.substr(user.size() - question.size()), question);
    EXPECT_NE(answer.find("m.optimize()"), std::string::npos) << answer;
    expect_quoted(user.substr(0, user.size() - question.size()), answer);
  }
}

TEST(QuoteDocs, ACorpusWithoutDataBlocksOrNoCorpusIsOneLineAndExitTwo) {
  if (!program_available("/usr/bin/python3") || !program_available("/usr/bin/zstdcat"))
    GTEST_SKIP() << "/usr/bin/python3 or /usr/bin/zstdcat not installed";
  TempDir d("quote_docs_bad");
  ASSERT_EQ(gen(d.path + "/plain", false).exit_code, 0);
  for (const std::string& corpus : {d.path + "/plain", d.path + "/absent"}) {
    ProcessResult r = quote_docs(corpus, d.path + "/docs.jsonl", false);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(corpus), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(d.path + "/docs.jsonl"));
  }
}

}  // namespace
}  // namespace trex::recipe
