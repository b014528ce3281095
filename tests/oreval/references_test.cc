// Bench4Opt's own reference programs, run under the gurobipy-compatible module in the
// sandbox, must reproduce the benchmark's optimal value (feasible split) or build an LP
// structurally equivalent to the reference LP (ORGEval split). The items where the benchmark
// itself disagrees are listed with the reason, and must fail exactly as explained.
//
// By default every second program runs (about 20 s on two loaded cores); TREX_OREVAL_ALL=1
// runs all 186. `trex eval run --references` does the same from the command line.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "trex/oreval/evaluate.h"
#include "trex/util/data_dir.h"
#include "trex/util/subprocess.h"

namespace trex::oreval {
namespace {

// id -> why the benchmark's own reference does not score.
const std::map<std::string, std::string>& known_feasible_misses() {
  static const std::map<std::string, std::string> k = {
      {"BENCH4OPT_32", "optimal_value 31748525.857318 differs from the model's optimum 31748525.856149 by 1.2e-3 (rel 4e-11)"},
      {"BENCH4OPT_364", "optimal_value 776738904.79016 differs from the model's optimum 776738904.78960 by 5.6e-4 (rel 7e-13)"},
      {"BENCH4OPT_380", "the reference program builds a different model (optimum 0.1445) from the one whose optimum (30) is given"},
  };
  return k;
}

const std::map<std::string, std::string>& known_orgeval_misses() {
  static const std::map<std::string, std::string> k = {
      {"BENCH4OPT_32", "lp_data/data_32 has 3 assets, the reference LP 10: data and LP come from different instances"},
      {"BENCH4OPT_144", "the program leaves X at its default lower bound 0; the reference LP declares X free"},
      {"BENCH4OPT_380", "the reference program builds a different model (6 variables, 7 rows) from the reference LP (7, 7)"},
  };
  return k;
}

void check_split(const char* name, const std::map<std::string, std::string>& misses) {
  if (find_data("or-benchmarks/bench4opt").empty()) GTEST_SKIP() << "Bench4Opt data not found under " << data_dir();
  if (!program_available("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not installed";
  bool all = std::getenv("TREX_OREVAL_ALL") != nullptr;
  Benchmark b = load_benchmark(name);
  std::vector<Item> kept;
  int index = 0;
  for (const Item& it : b.items) {
    if (it.reference_code.empty()) continue;
    if (all || index++ % 2 == 0 || misses.count(it.id)) kept.push_back(it);
  }
  b.items = kept;
  std::vector<Completion> completions;
  for (const Item& it : b.items) completions.push_back({it.id, 0, "```python\n" + it.reference_code + "\n```"});
  EvalOptions o;
  o.exec.python_dir = std::string(TREX_SOURCE_DIR) + "/python";
  // Hang guards, not expectations: every program here finishes, and a slow, loaded or
  // sanitizer-instrumented machine must give the same verdicts (BENCH4OPT_132's integer
  // equality and _364's non-convex QP take seconds in Release, many times that under ASan).
  o.exec.limits.wall_s = 900;
  o.exec.limits.cpu_s = 900;
  o.exec.solve_time_limit_s = 900;
  o.exec.allow_weak_sandbox = true;  // the benchmark's own programs, where a layer may be missing
  std::vector<ItemResult> results = evaluate(b, completions, o);
  ASSERT_EQ(results.size(), b.items.size());
  int correct = 0;
  for (const ItemResult& r : results) {
    auto known = misses.find(r.id);
    if (known == misses.end()) {
      EXPECT_EQ(r.error, ErrorClass::kCorrect) << r.id << ": " << to_string(r.error) << " " << r.status << " " << r.message;
    } else {
      EXPECT_NE(r.error, ErrorClass::kCorrect) << r.id << " now scores; drop it from the known misses (" << known->second << ")";
      EXPECT_TRUE(r.error == ErrorClass::kWrongObjective || r.error == ErrorClass::kWrongStructure)
          << r.id << ": " << to_string(r.error) << " " << r.message;
    }
    correct += r.error == ErrorClass::kCorrect;
  }
  ::testing::Test::RecordProperty("programs", int(results.size()));
  ::testing::Test::RecordProperty("correct", correct);
}

TEST(References, FeasibleSplitReproducesOptimalValues) { check_split("b4o-feasible", known_feasible_misses()); }

TEST(References, OrgevalSplitBuildsEquivalentModels) { check_split("b4o-orgeval", known_orgeval_misses()); }

}  // namespace
}  // namespace trex::oreval
