// The `trex` command line as a user meets it: the binary is run as a separate process on
// small model files written here, and its exit code, stdout and stderr are checked against
// the contract in apps/trex (0 solved, 2 usage or input error with one "trex: error: " line,
// 3 when the back end cannot solve the model).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "trex/util/data_dir.h"
#include "trex/util/subprocess.h"

namespace trex::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A run that needs this long is a hang, whatever the machine.
constexpr double kTimeout = 120;

ProcessResult run_trex(const std::vector<std::string>& args) {
  std::vector<std::string> argv{TREX_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions options;
  options.timeout_s = kTimeout;
  ProcessResult r = run_process(argv, options);
  EXPECT_FALSE(r.timed_out) << "trex timed out";
  EXPECT_FALSE(r.signaled) << "trex killed by signal " << r.signal;
  return r;
}

// A scratch directory for model files, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("trex_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::string p = (path_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

int count_lines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

// Exit 2 and exactly one stderr line "trex: error: ..." containing `words`; nothing on stdout.
void expect_usage_error(const std::vector<std::string>& args, const std::string& words) {
  std::string shown;
  for (const auto& a : args) shown += " " + a;
  ProcessResult r = run_trex(args);
  EXPECT_EQ(r.exit_code, 2) << "trex" << shown << "\n" << r.out << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << "trex" << shown << ": " << r.err;
  EXPECT_THAT(r.err, StartsWith("trex: error: ")) << "trex" << shown;
  EXPECT_THAT(r.err, HasSubstr(words)) << "trex" << shown;
  EXPECT_EQ(r.out, "") << "trex" << shown;
}

nlohmann::json solve_json(const std::vector<std::string>& args, int want_exit) {
  std::vector<std::string> all{"solve", "--json"};
  all.insert(all.end(), args.begin(), args.end());
  ProcessResult r = run_trex(all);
  EXPECT_EQ(r.exit_code, want_exit) << r.out << r.err;
  EXPECT_EQ(count_lines(r.out), 1) << "--json prints one line: " << r.out;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "stdout is not JSON (" << e.what() << "): " << r.out;
    return nlohmann::json::object();
  }
}

bool near(double got, double want) {
  return std::fabs(got - want) <= 1e-6 * std::max(1.0, std::fabs(want));
}

// max 3x + 2y, x + y <= 4, x + 3y <= 6, x <= 3: the optimum is x = 3, y = 1, value 11; z has
// no cost and stays at 0, which --all shows and the default output leaves out.
constexpr const char* kOptimalLp = R"(\ a small LP with a known optimum
Maximize
 obj: 3 x + 2 y
Subject To
 c1: x + y + z <= 4
 c2: x + 3 y <= 6
Bounds
 x <= 3
End
)";

constexpr const char* kInfeasibleLp = R"(Minimize
 obj: x + y
Subject To
 low: x + y >= 5
 high: x + y <= 3
End
)";

constexpr const char* kUnboundedLp = R"(Maximize
 obj: x + y
Subject To
 c: x - y <= 1
End
)";

// min -x^2 + 0.5 x + y over x in [-1, 2], y in [0, 1]: nonconvex, with a local minimum at
// x = -1 (value -1.5) and the global one at x = 2 (value -3).
constexpr const char* kNonconvexLp = R"(Minimize
 obj: 0.5 x + y + [ - 2 x ^ 2 ] / 2
Subject To
 c: x + y >= -1
Bounds
 -1 <= x <= 2
 y <= 1
End
)";

// A knapsack whose LP relaxation (about 24.7) is above the integer optimum 23 (a and b).
constexpr const char* kKnapsackLp = R"(Maximize
 value: 10 a + 13 b + 7 c + 8 d
Subject To
 weight: 4 a + 6 b + 3 c + 5 d <= 10
Binaries
 a b c d
End
)";

// min x + 2y, x + y >= 2, x <= 1.5: x = 1.5, y = 0.5, value 2.5.
constexpr const char* kSmallMps = R"(NAME          small
ROWS
 N  cost
 G  need
COLUMNS
    x         cost      1            need      1
    y         cost      2            need      1
RHS
    RHS       need      2
BOUNDS
 UP BND       x         1.5
ENDATA
)";

TEST(Cli, Version) {
  ProcessResult r = run_trex({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, std::string("trex ") + trex::version() + "\n");
  EXPECT_EQ(std::string(trex::version()), "0.1.0");
}

TEST(Cli, HelpListsSubcommandsAndTheirOptions) {
  ProcessResult top = run_trex({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_THAT(top.out, HasSubstr("demo"));
  EXPECT_THAT(top.out, HasSubstr("solve"));
  EXPECT_THAT(top.out, HasSubstr("--version"));

  ProcessResult solve = run_trex({"solve", "--help"});
  EXPECT_EQ(solve.exit_code, 0);
  for (const char* option : {"--solver", "--time-limit", "--threads", "--json", "--all", "file"})
    EXPECT_THAT(solve.out, HasSubstr(option));
  EXPECT_THAT(solve.out, HasSubstr("Exit status"));  // the exit codes are part of the contract

  ProcessResult demo = run_trex({"demo", "--help"});
  EXPECT_EQ(demo.exit_code, 0);
  EXPECT_THAT(demo.out, HasSubstr("demo"));
  EXPECT_THAT(demo.out, HasSubstr("--help"));
}

TEST(Cli, UsageErrorsAreOneLineAndExitTwo) {
  TempDir dir;
  std::string lp = dir.write("ok.lp", kOptimalLp);
  expect_usage_error({}, "subcommand");
  expect_usage_error({"nosuch"}, "nosuch");
  // Alone, an unknown flag is reported as the missing subcommand (CLI11 checks that first);
  // either way it is one line and exit 2. With a subcommand the flag itself is named.
  expect_usage_error({"--bogus"}, "");
  expect_usage_error({"--bogus", "demo"}, "--bogus");
  expect_usage_error({"solve"}, "file");
  expect_usage_error({"solve", lp, "--bogus"}, "--bogus");
  expect_usage_error({"solve", lp, "--time-limit", "-1"}, "--time-limit");
  expect_usage_error({"solve", lp, "--time-limit", "abc"}, "--time-limit");
  expect_usage_error({"solve", lp, "--threads", "0"}, "--threads");
  expect_usage_error({"solve", lp, "--solver", "nosuch"}, "--solver");
  expect_usage_error({"solve", lp, dir.write("second.lp", kOptimalLp)}, "");
  expect_usage_error({"demo", "--bogus"}, "--bogus");
}

TEST(Cli, InputErrorsNameTheFile) {
  TempDir dir;
  std::string missing = dir.file("missing.lp");
  expect_usage_error({"solve", missing}, missing);
  std::string bad = dir.write("bad.lp", "Minimize\n obj: x\nSubject To\n c: x >= \nEnd\n");
  expect_usage_error({"solve", bad}, bad + ":5:");
}

TEST(Cli, SolveOptimalHumanOutput) {
  TempDir dir;
  std::string lp = dir.write("opt.lp", kOptimalLp);
  ProcessResult r = run_trex({"solve", lp});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("model:     " + lp + " (3 variables, 0 integer, 2 constraints"));
  EXPECT_THAT(r.out, HasSubstr("status:    optimal\n"));
  EXPECT_THAT(r.out, HasSubstr("objective: 11\n"));
  EXPECT_THAT(r.out, HasSubstr("  x = 3\n"));
  EXPECT_THAT(r.out, HasSubstr("  y = 1\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("  z = ")));  // zeros only with --all

  ProcessResult all = run_trex({"solve", lp, "--all"});
  EXPECT_EQ(all.exit_code, 0);
  EXPECT_THAT(all.out, HasSubstr("  z = 0\n"));
}

TEST(Cli, SolveOptimalJson) {
  TempDir dir;
  std::string lp = dir.write("opt.lp", kOptimalLp);
  nlohmann::json j = solve_json({lp}, 0);
  EXPECT_EQ(j["file"], lp);
  EXPECT_EQ(j["status"], "optimal");
  ASSERT_TRUE(j["objective"].is_number()) << j.dump();
  EXPECT_TRUE(near(j["objective"].get<double>(), 11)) << j.dump();
  EXPECT_EQ(j["variables"].size(), 2u) << "nonzeros only: " << j.dump();
  EXPECT_TRUE(near(j["variables"].value("x", -1.0), 3)) << j.dump();
  EXPECT_TRUE(near(j["variables"].value("y", -1.0), 1)) << j.dump();
  EXPECT_TRUE(j["solver"].is_string() && !j["solver"].get<std::string>().empty());
  EXPECT_TRUE(j["solver_version"].is_string() && !j["solver_version"].get<std::string>().empty());
  EXPECT_TRUE(j["seconds"].is_number());

  nlohmann::json all = solve_json({lp, "--all"}, 0);
  EXPECT_EQ(all["variables"].size(), 3u) << all.dump();

  // Flags that change how, not what: a time limit that is not reached and more threads.
  nlohmann::json limited = solve_json({lp, "--time-limit", "60", "--threads", "2"}, 0);
  EXPECT_EQ(limited["status"], "optimal");
  EXPECT_TRUE(near(limited["objective"].get<double>(), 11)) << limited.dump();
}

// Gurobi's Pi and RC (reference manual, "Attributes": Pi the constraint dual value, RC the
// reduced cost), in the model's own sense. max 3x + 2y + z, x <= 3: x = 3, y = 1, z = 2,
// value 13; Pi(c1) = 1.5, Pi(c2) = -0.5 and RC(x) = 1.5 by hand (tests/lp/lp_duals_test.cc).
constexpr const char* kDualsLp = R"(Maximize
 obj: 3 x + 2 y + z
Subject To
 c1: x + y + z <= 6
 c2: z - y >= 1
Bounds
 x <= 3
End
)";

TEST(Cli, SolveJsonDualsOfAnLpOnly) {
  TempDir dir;
  std::string lp = dir.write("duals.lp", kDualsLp);
  nlohmann::json j = solve_json({lp}, 0);
  ASSERT_TRUE(j.contains("duals") && j.contains("reduced_costs")) << j.dump();
  EXPECT_TRUE(near(j["duals"].value("c1", 0.0), 1.5)) << j.dump();
  EXPECT_TRUE(near(j["duals"].value("c2", 0.0), -0.5)) << j.dump();
  EXPECT_EQ(j["reduced_costs"].size(), 1u) << "nonzeros only: " << j.dump();
  EXPECT_TRUE(near(j["reduced_costs"].value("x", 0.0), 1.5)) << j.dump();
  nlohmann::json all = solve_json({lp, "--all"}, 0);
  EXPECT_EQ(all["reduced_costs"].size(), 3u) << all.dump();
  EXPECT_EQ(all["duals"].size(), 2u) << all.dump();

  // A MIP has none (nor has Gurobi), and neither has a model without a solution.
  nlohmann::json mip = solve_json({dir.write("knapsack.lp", kKnapsackLp)}, 0);
  EXPECT_EQ(mip["status"], "optimal");
  EXPECT_FALSE(mip.contains("duals") || mip.contains("reduced_costs")) << mip.dump();
  nlohmann::json infeasible = solve_json({dir.write("infeasible.lp", kInfeasibleLp)}, 0);
  EXPECT_FALSE(infeasible.contains("duals") || infeasible.contains("reduced_costs")) << infeasible.dump();
}

TEST(Cli, SolveInfeasible) {
  TempDir dir;
  std::string lp = dir.write("infeasible.lp", kInfeasibleLp);
  nlohmann::json j = solve_json({lp}, 0);
  EXPECT_EQ(j["status"], "infeasible");
  EXPECT_TRUE(j["objective"].is_null()) << j.dump();
  EXPECT_TRUE(j["variables"].empty()) << j.dump();

  ProcessResult r = run_trex({"solve", lp});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("status:    infeasible\n"));
  EXPECT_THAT(r.out, Not(HasSubstr("objective:")));
}

TEST(Cli, SolveUnbounded) {
  TempDir dir;
  std::string lp = dir.write("unbounded.lp", kUnboundedLp);
  nlohmann::json j = solve_json({lp}, 0);
  EXPECT_EQ(j["status"], "unbounded");
  EXPECT_TRUE(j["objective"].is_null()) << j.dump();
}

TEST(Cli, NonconvexQpIsUnsupportedByCbcAndSolvedByDefault) {
  TempDir dir;
  std::string lp = dir.write("nonconvex.lp", kNonconvexLp);

  // CBC cannot solve it and says so (exit 3), instead of returning the local minimum.
  nlohmann::json cbc = solve_json({lp, "--solver", "cbc"}, 3);
  EXPECT_EQ(cbc["status"], "unsupported");
  EXPECT_TRUE(cbc["objective"].is_null()) << cbc.dump();
  EXPECT_FALSE(cbc.value("message", "").empty()) << "unsupported must say why: " << cbc.dump();
  ProcessResult human = run_trex({"solve", lp, "--solver", "cbc"});
  EXPECT_EQ(human.exit_code, 3);
  EXPECT_THAT(human.out, HasSubstr("status:    unsupported\n"));
  EXPECT_THAT(human.out, HasSubstr("message:   "));

  // The default back end routes it to the global solver: x = 2, y = 0, value -3.
  nlohmann::json def = solve_json({lp}, 0);
  EXPECT_EQ(def["status"], "optimal");
  ASSERT_TRUE(def["objective"].is_number()) << def.dump();
  EXPECT_TRUE(near(def["objective"].get<double>(), -3)) << def.dump();
  EXPECT_TRUE(near(def["variables"].value("x", 0.0), 2)) << def.dump();
}

TEST(Cli, GlpkAgreesWithCbcOnMilp) {
  if (!program_available("glpsol")) GTEST_SKIP() << "glpsol is not installed";
  TempDir dir;
  std::string lp = dir.write("knapsack.lp", kKnapsackLp);
  nlohmann::json cbc = solve_json({lp, "--solver", "cbc"}, 0);
  nlohmann::json glpk = solve_json({lp, "--solver", "glpk"}, 0);
  EXPECT_EQ(cbc["solver"], "cbc");
  EXPECT_EQ(glpk["solver"], "glpk");
  ASSERT_EQ(cbc["status"], "optimal") << cbc.dump();
  ASSERT_EQ(glpk["status"], "optimal") << glpk.dump();
  EXPECT_TRUE(near(cbc["objective"].get<double>(), 23)) << cbc.dump();
  EXPECT_TRUE(near(glpk["objective"].get<double>(), cbc["objective"].get<double>())) << glpk.dump();
}

TEST(Cli, SolveMps) {
  TempDir dir;
  std::string mps = dir.write("small.mps", kSmallMps);
  nlohmann::json j = solve_json({mps}, 0);
  EXPECT_EQ(j["status"], "optimal");
  ASSERT_TRUE(j["objective"].is_number()) << j.dump();
  EXPECT_TRUE(near(j["objective"].get<double>(), 2.5)) << j.dump();
  EXPECT_TRUE(near(j["variables"].value("x", 0.0), 1.5)) << j.dump();
  EXPECT_TRUE(near(j["variables"].value("y", 0.0), 0.5)) << j.dump();

  ProcessResult r = run_trex({"solve", mps});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("status:    optimal\n"));
  EXPECT_THAT(r.out, HasSubstr("objective: 2.5\n"));
}

TEST(Cli, Demo) {
  ProcessResult r = run_trex({"demo"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("trex demo"));
  EXPECT_THAT(r.out, HasSubstr("round trip: identical"));
  EXPECT_THAT(r.out, HasSubstr("cbc:  optimal"));
  // The serve-and-evaluate step: the trained model over HTTP, two answers, drained, scored.
  EXPECT_THAT(r.out, HasSubstr("trex eval gen: 2 completions over HTTP"));
  EXPECT_THAT(r.out, HasSubstr("trex serve: stopped by SIGTERM, exit 0 (drained)"));
  EXPECT_THAT(r.out, HasSubstr("trex eval run: Pass@1 "));
}

}  // namespace
}  // namespace trex::cli
