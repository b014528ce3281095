// The `trex` launcher (apps/launcher): `trex solve ...` becomes trex-solve, `trex eval
// run|list|equiv ...` trex-eval, anything else trex-full, all found next to the launcher; a
// missing one is named in one error line. The launcher is copied into a scratch directory
// beside three stand-in scripts that print which program ran and with what arguments.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "trex/util/subprocess.h"

namespace trex::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class Launcher : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("trex_launcher_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy_file(TREX_BINARY, dir_ / "trex");
    stand_in("trex-solve");
    stand_in("trex-eval");
    stand_in("trex-full");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void stand_in(const std::string& name) {
    fs::path p = dir_ / name;
    std::ofstream(p) << "#!/bin/sh\necho " << name << " \"$@\"\n";
    fs::permissions(p, fs::perms::owner_all);
  }
  ProcessResult run(std::vector<std::string> args) {
    args.insert(args.begin(), (dir_ / "trex").string());
    ProcessOptions options;
    options.timeout_s = 120;  // a hang guard only
    return run_process(args, options);
  }
  fs::path dir_;
};

TEST_F(Launcher, SolveGoesToTrexSolveEverythingElseToTrexFull) {
  ProcessResult r = run({"solve", "model.lp", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "trex-solve solve model.lp --json\n");
  r = run({"--version"});
  EXPECT_EQ(r.out, "trex-full --version\n");
  // Only the first argument chooses: help about solve is trex-full's.
  r = run({"--help", "solve"});
  EXPECT_EQ(r.out, "trex-full --help solve\n");
  r = run({"data", "solve"});
  EXPECT_EQ(r.out, "trex-full data solve\n");
  r = run({});
  EXPECT_EQ(r.out, "trex-full\n");
}

// trex-eval has solve and three of eval's four subcommands (apps/trex/eval_command.cc); gen,
// which needs the chat client, eval's own help, and everything else stay trex-full's.
TEST_F(Launcher, EvalRunListAndEquivGoToTrexEval) {
  for (const char* sub : {"run", "list", "equiv"}) {
    ProcessResult r = run({"eval", sub, "--out", "x"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, std::string("trex-eval eval ") + sub + " --out x\n");
  }
  ProcessResult r = run({"eval", "gen", "--bench", "nl4opt"});
  EXPECT_EQ(r.out, "trex-full eval gen --bench nl4opt\n");
  r = run({"eval"});
  EXPECT_EQ(r.out, "trex-full eval\n");
  r = run({"eval", "--help", "run"});
  EXPECT_EQ(r.out, "trex-full eval --help run\n");
  r = run({"data", "eval", "run"});
  EXPECT_EQ(r.out, "trex-full data eval run\n");
  r = run({"eval", "runs"});
  EXPECT_EQ(r.out, "trex-full eval runs\n");
}

// trex-solve starts with one OpenBLAS thread (its workers would only cost start-up time); a
// value the caller set is kept, and trex-full's environment is left alone.
TEST_F(Launcher, TrexSolveStartsWithOneBlasThreadUnlessTheCallerChose) {
  for (const char* name : {"trex-solve", "trex-eval", "trex-full"}) {
    std::ofstream(dir_ / name) << "#!/bin/sh\necho " << name << " ${OPENBLAS_NUM_THREADS-unset}\n";
  }
  std::string trex = (dir_ / "trex").string();
  ProcessOptions options;
  options.timeout_s = 120;  // a hang guard only
  ProcessResult r = run_process({"env", "-u", "OPENBLAS_NUM_THREADS", trex, "solve", "x.lp"}, options);
  EXPECT_EQ(r.out, "trex-solve 1\n") << r.err;
  r = run_process({"env", "-u", "OPENBLAS_NUM_THREADS", trex, "--version"}, options);
  EXPECT_EQ(r.out, "trex-full unset\n") << r.err;
  r = run_process({"env", "OPENBLAS_NUM_THREADS=4", trex, "solve", "x.lp"}, options);
  EXPECT_EQ(r.out, "trex-solve 4\n") << r.err;
  // So does trex-eval: its solves run in the solve helper, which sets its own.
  r = run_process({"env", "-u", "OPENBLAS_NUM_THREADS", trex, "eval", "run"}, options);
  EXPECT_EQ(r.out, "trex-eval 1\n") << r.err;
  r = run_process({"env", "OPENBLAS_NUM_THREADS=4", trex, "eval", "list"}, options);
  EXPECT_EQ(r.out, "trex-eval 4\n") << r.err;
}

TEST_F(Launcher, AMissingProgramIsNamed) {
  fs::remove(dir_ / "trex-full");
  ProcessResult r = run({"--version"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("trex: internal error: cannot run " + (dir_ / "trex-full").string()));
  EXPECT_EQ(r.out, "");
  fs::remove(dir_ / "trex-solve");
  r = run({"solve", "x.lp"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr((dir_ / "trex-solve").string()));
  fs::remove(dir_ / "trex-eval");
  r = run({"eval", "run"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr((dir_ / "trex-eval").string()));
}

// The real programs: trex solve answers through trex-solve and trex eval run through
// trex-eval, which exist next to trex.
TEST(LauncherBuild, TheProgramsLieTogether) {
  fs::path dir = fs::path(TREX_BINARY).parent_path();
  EXPECT_TRUE(fs::exists(dir / "trex-solve"));
  EXPECT_TRUE(fs::exists(dir / "trex-eval"));
  EXPECT_TRUE(fs::exists(dir / "trex-full"));
}

}  // namespace
}  // namespace trex::cli
