// bench/recipe_failure_kinds.py (issue 16, session 17): each held-out completion compared with its
// reference statement-data program (names, values, values by position, numbers from the statement,
// loops), and the two spliced files (reference data + the model's program; the model's data + the
// reference program); bad input is one line naming the file and line, exit 2, nothing written.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "nlohmann/json.hpp"
#include "util/temp_dir.h"
#include "trex/util/subprocess.h"

namespace trex::recipe {
namespace {

using test_util::TempDir;

const char* kQuestion = "Boilers nova and onyx. Nova: capacity 57, fuel cost 25. Onyx: capacity 11, fuel cost 9.";

std::string program(const std::string& data, const std::string& rest) {
  return "```python\nimport gurobipy as gp\n\n# Data, in the order the statement gives it\n" + data + rest + "```";
}

const std::string kRest =
    "\nm = gp.Model(\"d\")\nsteam = {}\nsteam[\"nova\"] = m.addVar(ub=nova_capacity)\n"
    "steam[\"onyx\"] = m.addVar(ub=onyx_capacity)\n";
const std::string kReferenceData = "nova_capacity = 57\nnova_fuel_cost = 25\nonyx_capacity = 11\nonyx_fuel_cost = 9\n";

void write(const std::string& path, const std::vector<nlohmann::json>& rows) {
  std::ofstream f(path);
  for (const auto& r : rows) f << r.dump() << "\n";
}

ProcessResult kinds(const std::string& dir, const std::string& completions, const std::string& out) {
  return run_process({"/usr/bin/python3", std::string(TREX_SOURCE_DIR) + "/bench/recipe_failure_kinds.py", "--bench",
                      dir + "/bench.jsonl", "--reference", dir + "/ref.jsonl", "--completions", completions, "--out", out});
}

void write_bench_and_reference(const std::string& dir) {
  write(dir + "/bench.jsonl", {{{"id", "a"}, {"question", kQuestion}, {"answer", 1}},
                               {{"id", "b"}, {"question", kQuestion}, {"answer", 1}}});
  write(dir + "/ref.jsonl", {{{"id", "a"}, {"completion", program(kReferenceData, kRest)}},
                             {{"id", "b"}, {"completion", program(kReferenceData, kRest)}}});
}

TEST(FailureKinds, NamesValuesStatementNumbersLoopsAndSplices) {
  if (!program_available("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not installed";
  TempDir d("failure_kinds");
  write_bench_and_reference(d.path);
  // a: the reference itself. b: two of four names, one value right, one number the statement never
  // gives, a looping program that never closes its fence.
  const std::string looping = "```python\n# Data, in the order the statement gives it\nnova_capacity = 57\n"
                              "onyx_capacity = 12\nother = 3\n\nm.addConstr(x)\nm.addConstr(x)\nm.addConstr(x)\n";
  write(d.path + "/c.jsonl", {{{"id", "a"}, {"sample", 0}, {"completion", program(kReferenceData, kRest)}},
                              {{"id", "b"}, {"sample", 0}, {"completion", looping}}});
  ProcessResult r = kinds(d.path, d.path + "/c.jsonl", d.path + "/out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, nlohmann::json> k;
  std::ifstream in(d.path + "/out/kinds.jsonl");
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    k[j["id"]] = j;
  }
  ASSERT_EQ(k.size(), 2u);
  EXPECT_TRUE(k["a"]["stopped"].get<bool>());
  EXPECT_FALSE(k["a"]["loop"].get<bool>());
  EXPECT_DOUBLE_EQ(k["a"]["names"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(k["a"]["values"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(k["a"]["by_position"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(k["a"]["from_statement"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(k["a"]["keys"].get<double>(), 1.0);
  EXPECT_FALSE(k["b"]["stopped"].get<bool>());
  EXPECT_TRUE(k["b"]["loop"].get<bool>());
  EXPECT_EQ(k["b"]["data_lines"].get<int>(), 3);
  EXPECT_DOUBLE_EQ(k["b"]["names"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(k["b"]["values"].get<double>(), 0.5);
  // By position: line 1 (57) is right; line 2 has 12 where the reference's has 25; 3 and 4 are
  // not 11 and 9.
  EXPECT_DOUBLE_EQ(k["b"]["by_position"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(k["b"]["from_statement"].get<double>(), 1.0 / 3);
  EXPECT_DOUBLE_EQ(k["b"]["keys"].get<double>(), 0.0);

  // The splices: b's program after its data block behind the reference's block, and b's block
  // in front of the reference's program.
  std::ifstream sd(d.path + "/out/reference-data.jsonl"), sp(d.path + "/out/reference-program.jsonl");
  std::string line;
  std::getline(sd, line);
  std::getline(sd, line);
  std::string b_data = nlohmann::json::parse(line)["completion"];
  EXPECT_EQ(b_data, "```python\nimport gurobipy as gp\n\n# Data, in the order the statement gives it\n" + kReferenceData +
                        "\nm.addConstr(x)\nm.addConstr(x)\nm.addConstr(x)\n```");
  std::getline(sp, line);
  EXPECT_EQ(nlohmann::json::parse(line)["completion"].get<std::string>(), program(kReferenceData, kRest));
  std::getline(sp, line);
  std::string b_program = nlohmann::json::parse(line)["completion"];
  EXPECT_EQ(b_program, "```python\n# Data, in the order the statement gives it\nnova_capacity = 57\nonyx_capacity = 12\n"
                       "other = 3\n" + kRest + "```");
}

TEST(FailureKinds, BadInputIsOneLineNamingFileAndLineAndExitTwo) {
  if (!program_available("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not installed";
  TempDir d("failure_kinds_bad");
  write_bench_and_reference(d.path);
  {
    std::ofstream f(d.path + "/notjson.jsonl");
    f << nlohmann::json{{"id", "a"}, {"completion", "x"}}.dump() << "\n{oops\n";
  }
  write(d.path + "/noid.jsonl", {{{"completion", "x"}}});
  write(d.path + "/unknown.jsonl", {{{"id", "zzz"}, {"completion", "x"}}});
  const std::map<std::string, std::string> expected = {{d.path + "/notjson.jsonl", "notjson.jsonl:2"},
                                                       {d.path + "/noid.jsonl", "noid.jsonl:1"},
                                                       {d.path + "/unknown.jsonl", "unknown.jsonl:1"},
                                                       {d.path + "/absent.jsonl", "absent.jsonl"}};
  for (const auto& [completions, where] : expected) {
    ProcessResult r = kinds(d.path, completions, d.path + "/out");
    EXPECT_EQ(r.exit_code, 2) << completions << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(where), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(d.path + "/out")) << completions;
  }
  // A reference without a data block cannot be compared: named with its line.
  write(d.path + "/ref.jsonl", {{{"id", "a"}, {"completion", "```python\nprint(1)\n```"}}});
  ProcessResult r = kinds(d.path, d.path + "/notjson.jsonl", d.path + "/out");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("ref.jsonl:1"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(d.path + "/out"));
}

}  // namespace
}  // namespace trex::recipe
