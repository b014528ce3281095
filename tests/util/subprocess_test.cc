#include <gtest/gtest.h>
#include <signal.h>

#include "trex/util/error.h"
#include "trex/util/subprocess.h"

namespace trex {
namespace {

TEST(Subprocess, CapturesOutputAndExitCode) {
  ProcessResult r = run_process({"sh", "-c", "echo out; echo err >&2; exit 7"});
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_FALSE(r.signaled);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(Subprocess, FeedsStdinAndSurvivesAChildThatIgnoresIt) {
  ProcessOptions o;
  o.stdin_data = "hello";
  EXPECT_EQ(run_process({"cat"}, o).out, "hello");
  o.stdin_data = std::string(4 << 20, 'x');  // more than a pipe holds; the child exits first
  EXPECT_EQ(run_process({"true"}, o).exit_code, 0);
}

TEST(Subprocess, TimeoutKillsTheWholeGroup) {
  ProcessOptions o;
  o.timeout_s = 0.3;
  ProcessResult r = run_process({"sh", "-c", "sleep 30 & sleep 30"}, o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_TRUE(r.signaled);
}

TEST(Subprocess, WorkingDirectoryAndMissingProgram) {
  ProcessOptions o;
  o.cwd = "/";
  EXPECT_EQ(run_process({"pwd"}, o).out, "/\n");
  EXPECT_THROW(run_process({"/nonexistent/program"}), InputError);
  EXPECT_TRUE(program_available("sh"));
  EXPECT_FALSE(program_available("no-such-program-trex"));
}

TEST(Subprocess, BackgroundProcessSaysItsLineThenStopsOnASignal) {
  BackgroundProcess p = start_background({"sh", "-c", "echo ready on port 7; exec sleep 600"});
  EXPECT_EQ(read_line(p.out), "ready on port 7");
  EXPECT_EQ(stop_background(p, SIGTERM), 128 + SIGTERM);
  EXPECT_EQ(p.pid, -1);
  EXPECT_EQ(stop_background(p, SIGTERM), -1);  // nothing runs any more
  BackgroundProcess q = start_background({"sh", "-c", "exit 3"});
  EXPECT_EQ(read_line(q.out), "");  // end of file
  EXPECT_EQ(stop_background(q, SIGTERM), 3);
  EXPECT_THROW(start_background({"no-such-program-trex"}), InputError);
}

}  // namespace
}  // namespace trex
