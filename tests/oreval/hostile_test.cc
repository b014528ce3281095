// Hostile completions are contained and classified, and the harness survives every one.
// Each runs under /usr/bin/python3 in the sandbox with small limits.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "trex/oreval/execute.h"
#include "trex/oreval/sandbox.h"
#include "trex/util/subprocess.h"

namespace trex::oreval {
namespace {

ExecOptions small_limits() {
  ExecOptions o;
  o.python_dir = std::string(TREX_SOURCE_DIR) + "/python";
  o.limits.wall_s = 3;
  o.limits.cpu_s = 3;
  o.limits.memory_bytes = size_t(512) << 20;
  o.limits.output_bytes = size_t(64) << 10;
  o.solve_time_limit_s = 5;
  return o;
}

Execution run(const std::string& code) {
  if (!program_available("/usr/bin/python3")) return {};
  return execute({CodeKind::kPython, code}, "", small_limits());
}

#define REQUIRE_PYTHON() \
  if (!program_available("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not installed"

// A layer the kernel does not offer is reported as a skip naming it, never passed silently.
#define REQUIRE_LAYER(name)                                              \
  if (sandbox_isolation().find(name) == std::string::npos)              \
  GTEST_SKIP() << "sandbox layer '" << name << "' unavailable here: " << sandbox_isolation()

TEST(Hostile, WellBehavedProgramSolves) {
  REQUIRE_PYTHON();
  Execution e = run(
      "from gurobipy import Model, GRB, quicksum\n"
      "model = Model('t')\n"
      "x = model.addVars(3, vtype=GRB.INTEGER, ub=4, name='x')\n"
      "model.setObjective(quicksum((i + 1) * x[i] for i in range(3)), GRB.MAXIMIZE)\n"
      "model.addConstr(x.sum() <= 5, 'cap')\n"
      "model.optimize()\n"
      "print(model.Status == GRB.OPTIMAL, model.ObjVal, x[2].X)\n");
  ASSERT_EQ(e.status, ExecStatus::kOk) << e.message;
  EXPECT_EQ(e.output, "trex: optimal, objective 14\nTrue 14.0 4.0\n");
  EXPECT_EQ(e.solve_requests, 1);
  ASSERT_TRUE(e.model);
  EXPECT_EQ(e.model->num_vars(), 3);
}

TEST(Hostile, InfiniteLoopTimesOut) {
  REQUIRE_PYTHON();
  Execution e = run("while True:\n    pass\n");
  EXPECT_EQ(e.status, ExecStatus::kTimeout) << e.message;
  EXPECT_LT(e.seconds, 10);
}

TEST(Hostile, SleepingProgramIsKilledAtTheWallClock) {
  REQUIRE_PYTHON();
  Execution e = run("import time\ntime.sleep(60)\n");
  EXPECT_EQ(e.status, ExecStatus::kTimeout) << e.message;
  EXPECT_LT(e.seconds, 10);
}

TEST(Hostile, ForkBombIsRefused) {
  REQUIRE_PYTHON();
  REQUIRE_LAYER("seccomp");
  Execution e = run("import os\nwhile True:\n    os.fork()\n");
  EXPECT_EQ(e.status, ExecStatus::kRuntimeError) << e.message;
  EXPECT_NE(e.message.find("PermissionError"), std::string::npos) << e.message;
  Execution s = run("import subprocess\nsubprocess.run(['/bin/true'])\n");
  EXPECT_EQ(s.status, ExecStatus::kRuntimeError) << s.message;
}

TEST(Hostile, MemoryHogFails) {
  REQUIRE_PYTHON();
  Execution e = run("blocks = []\nwhile True:\n    blocks.append(bytearray(64 << 20))\n");
  EXPECT_EQ(e.status, ExecStatus::kRuntimeError) << e.message;
  EXPECT_NE(e.message.find("MemoryError"), std::string::npos) << e.message;
}

TEST(Hostile, HugeOutputIsCut) {
  REQUIRE_PYTHON();
  Execution e = run("import sys\nline = 'x' * 1000 + '\\n'\nwhile True:\n    sys.stdout.write(line)\n");
  EXPECT_EQ(e.status, ExecStatus::kRuntimeError);
  EXPECT_EQ(e.message, "output limit reached");
  EXPECT_LE(e.output.size(), size_t(64) << 10);
  Execution f = run("with open('big', 'wb') as f:\n    f.write(b'0' * (200 << 20))\n");
  EXPECT_EQ(f.status, ExecStatus::kRuntimeError) << f.message;  // RLIMIT_FSIZE (64 MiB)
}

TEST(Hostile, FilesOutsideTheSandboxAreUnreadable) {
  REQUIRE_PYTHON();
  REQUIRE_LAYER("landlock");
  std::string secret = (std::filesystem::temp_directory_path() / ("trex_secret_" + std::to_string(getpid()))).string();
  {
    std::ofstream(secret) << "top secret\n";
  }
  std::filesystem::permissions(secret, std::filesystem::perms::all);
  for (const std::string& path : {secret, std::string("/etc/passwd"), std::string(TREX_SOURCE_DIR) + "/README.md"}) {
    Execution e = run("print(open('" + path + "').read())\n");
    EXPECT_EQ(e.status, ExecStatus::kRuntimeError) << path << ": " << e.message;
    EXPECT_NE(e.message.find("PermissionError"), std::string::npos) << path << ": " << e.message;
    EXPECT_EQ(e.output.find("top secret"), std::string::npos);
  }
  Execution w = run("open('" + secret + "', 'w').write('overwritten')\n");
  EXPECT_EQ(w.status, ExecStatus::kRuntimeError);
  std::ifstream in(secret);
  std::string content;
  std::getline(in, content);
  EXPECT_EQ(content, "top secret");
  std::filesystem::remove(secret);
}

TEST(Hostile, NoNetworkAndNoSignalsToOthers) {
  REQUIRE_PYTHON();
  REQUIRE_LAYER("seccomp");
  Execution e = run("import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\ns.connect(('127.0.0.1', 22))\n");
  EXPECT_EQ(e.status, ExecStatus::kRuntimeError) << e.message;
  EXPECT_NE(e.message.find("PermissionError"), std::string::npos) << e.message;
  Execution k = run("import os, signal\nos.kill(1, signal.SIGKILL)\n");
  EXPECT_EQ(k.status, ExecStatus::kRuntimeError) << k.message;
  Execution all = run("import os, signal\nos.kill(-1, signal.SIGKILL)\n");
  EXPECT_EQ(all.status, ExecStatus::kRuntimeError) << all.message;
}

TEST(Hostile, SyntaxGarbageAndOddUnicode) {
  REQUIRE_PYTHON();
  Execution e = run("def (:\n  ]]] ```\n");
  EXPECT_EQ(e.status, ExecStatus::kSyntaxError) << e.message;
  Execution nul = run(std::string("x = 1\0\n", 7));
  EXPECT_EQ(nul.status, ExecStatus::kSyntaxError) << nul.message;
  Execution u = run(
      "from gurobipy import Model\n"
      "m\u00e9 = Model('\u6a21\u578b \U0001F600')\n"
      "v = m\u00e9.addVar(ub=3, name='\u0445\u202e\u200b')\n"
      "m\u00e9.setObjective(v, -1)\n"
      "m\u00e9.optimize()\n"
      "print('\\udcff'.encode('utf-8', 'surrogateescape'))\n");
  EXPECT_EQ(u.status, ExecStatus::kOk) << u.message;
  ASSERT_TRUE(u.model);
  EXPECT_EQ(u.model->num_vars(), 1);
  Execution bad_utf8 = run("print('\\xff')\nx = '\xff\xfe'\n");
  EXPECT_NE(bad_utf8.status, ExecStatus::kTimeout);
}

TEST(Hostile, RaisingLimitsIsRefused) {
  REQUIRE_PYTHON();
  REQUIRE_LAYER("seccomp");
  Execution e = run("import resource\nresource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n");
  EXPECT_EQ(e.status, ExecStatus::kRuntimeError) << e.message;
}

}  // namespace
}  // namespace trex::oreval
