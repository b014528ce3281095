// bench/recipe_data_block_docs.py (issue 16's session 16 pilots): a statement-data corpus becomes
// conversations whose answer is the program's data block alone, every number of it copied from
// the statement in the statement's order; a corpus without data blocks, or no corpus, is one line
// and exit 2 with nothing written.
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

ProcessResult docs(const std::string& corpus, const std::string& out) {
  return run_process({"/usr/bin/python3", std::string(TREX_SOURCE_DIR) + "/bench/recipe_data_block_docs.py", "--sft",
                      corpus, "--out", out});
}

ProcessResult gen(const std::string& out, bool statement_data) {
  std::vector<std::string> args = {"data", "gen", "--config", std::string(TREX_SOURCE_DIR) + "/configs/recipe/mini-data.toml",
                                   "--count", "12", "--seed", "3", "--out", out, "--quiet"};
  // Explicit either way: mini-data.toml itself asks for statement-data programs since session 20.
  args.insert(args.end(), {"--program-style", statement_data ? "statement-data" : "plain"});
  return test_util::run_trex(args);
}

TEST(DataBlockDocs, EachAnswerIsTheDataBlockWithTheStatementsNumbersInOrder) {
  if (!program_available("/usr/bin/python3") || !program_available("/usr/bin/zstdcat"))
    GTEST_SKIP() << "/usr/bin/python3 or /usr/bin/zstdcat not installed";
  TempDir d("data_block_docs");
  ASSERT_EQ(gen(d.path + "/sd", true).exit_code, 0);
  ProcessResult r = docs(d.path + "/sd", d.path + "/docs.jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(d.path + "/docs.jsonl");
  std::string line;
  int rows = 0;
  const std::regex assignment(R"(\n[a-z_][a-z0-9_]* = ([0-9]+(\.[0-9]+)?)(?=\n))");
  while (std::getline(in, line)) {
    ++rows;
    auto m = nlohmann::json::parse(line)["messages"];
    std::string user = m[0]["content"], answer = m[1]["content"];
    EXPECT_EQ(user.find("gurobipy"), std::string::npos);
    EXPECT_NE(user.find("in the order the statement gives it."), std::string::npos);
    ASSERT_EQ(answer.rfind("```python\n# Data, in the order the statement gives it\n", 0), 0u) << answer;
    EXPECT_EQ(answer.substr(answer.size() - 4), "\n```");
    // Every number of the block is the statement's, found after the one before it.
    size_t at = 0;
    int numbers = 0;
    for (std::sregex_iterator it(answer.begin(), answer.end(), assignment), end; it != end; ++it, ++numbers) {
      const std::string number = (*it)[1];
      size_t found = user.find(number, at);
      ASSERT_NE(found, std::string::npos) << number << " after offset " << at << " in\n" << user << "\n" << answer;
      at = found + number.size();
    }
    EXPECT_GE(numbers, 3) << answer;
  }
  EXPECT_EQ(rows, 12);
}

TEST(DataBlockDocs, ACorpusWithoutDataBlocksOrNoCorpusIsOneLineAndExitTwo) {
  if (!program_available("/usr/bin/python3") || !program_available("/usr/bin/zstdcat"))
    GTEST_SKIP() << "/usr/bin/python3 or /usr/bin/zstdcat not installed";
  TempDir d("data_block_docs_bad");
  ASSERT_EQ(gen(d.path + "/plain", false).exit_code, 0);
  for (const std::string& corpus : {d.path + "/plain", d.path + "/absent"}) {
    ProcessResult r = docs(corpus, d.path + "/docs.jsonl");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(corpus), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(d.path + "/docs.jsonl"));
  }
}

}  // namespace
}  // namespace trex::recipe
