// `trex eval` through the real binary: equiv, list, run on a small benchmark, bad input.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "nlohmann/json.hpp"
#include "trex/oreval/sandbox.h"
#include "trex/util/atomic_file.h"
#include "trex/util/data_dir.h"
#include "trex/util/subprocess.h"

namespace trex {
namespace {

namespace fs = std::filesystem;

// `env` (e.g. {"/usr/bin/env", "NAME=VALUE"}) goes before the binary.
ProcessResult trex(std::vector<std::string> args, const std::vector<std::string>& env = {}) {
  args.insert(args.begin(), TREX_BINARY);
  args.insert(args.begin(), env.begin(), env.end());
  ProcessOptions o;
  o.timeout_s = 120;
  return run_process(args, o);
}

struct TempDir {
  std::string path;
  TempDir() {
    path = (fs::temp_directory_path() / ("trex_eval_cli_" + std::to_string(getpid()))).string();
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

const char* kLpA = "Maximize\n obj: 3 x + 2 y\nSubject To\n c1: x + y <= 4\n c2: x + 3 y <= 6\n xb: x <= 3\nEnd\n";
// The same model: renamed, rows swapped and negated, the bound written in Bounds.
const char* kLpB = "Maximize\n profit: 2 b + 3 a\nSubject To\n r2: - a - 3 b >= -6\n r1: b + a <= 4\nBounds\n a <= 3\nEnd\n";
const char* kLpC = "Maximize\n obj: 3 x + 2 y\nSubject To\n c1: x + y <= 4\n c2: x + 2 y <= 6\n xb: x <= 3\nEnd\n";

TEST(EvalCli, Equiv) {
  TempDir d;
  write_file_atomic(d.path + "/a.lp", kLpA);
  write_file_atomic(d.path + "/b.lp", kLpB);
  write_file_atomic(d.path + "/c.lp", kLpC);
  ProcessResult same = trex({"eval", "equiv", d.path + "/a.lp", d.path + "/b.lp"});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.out.find("equivalent"), std::string::npos) << same.out;
  ProcessResult differ = trex({"eval", "equiv", d.path + "/a.lp", d.path + "/c.lp"});
  EXPECT_EQ(differ.exit_code, 1);
  EXPECT_NE(differ.out.find("different: coefficients differ"), std::string::npos) << differ.out;
  write_file_atomic(d.path + "/bad.lp", "Maximize\n obj: 3 x +\nSubject To\n c1: x <=\nEnd\n");
  ProcessResult bad = trex({"eval", "equiv", d.path + "/a.lp", d.path + "/bad.lp"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("bad.lp:"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

TEST(EvalCli, RunScoresAndReports) {
  TempDir d;
  std::string bench = d.path + "/bench.jsonl";
  write_file_atomic(bench,
                    "{\"id\":\"lp\",\"q\":\"max 3x+2y\",\"a\":\"11\"}\n"
                    "{\"id\":\"py\",\"q\":\"max\",\"a\":14}\n"
                    "{\"id\":\"wrong\",\"q\":\"max\",\"a\":99}\n"
                    "{\"id\":\"junk\",\"q\":\"?\",\"a\":1}\n"
                    "{\"id\":\"silent\",\"q\":\"?\",\"a\":1}\n"
                    "{\"id\":\"infeasible\",\"q\":\"?\",\"a\":\"No Best Solution\"}\n");
  nlohmann::json lines = nlohmann::json::array();
  std::string py =
      "```python\nfrom gurobipy import Model, GRB, quicksum\nmodel = Model()\n"
      "x = model.addVars(3, vtype=GRB.INTEGER, ub=4)\n"
      "model.setObjective(quicksum((i + 1) * x[i] for i in range(3)), GRB.MAXIMIZE)\n"
      "model.addConstr(x.sum() <= 5)\nmodel.optimize()\nprint(model.ObjVal)\n```";
  std::string completions;
  auto add = [&](const std::string& id, const std::string& text) {
    completions += nlohmann::json({{"id", id}, {"completion", text}}).dump() + "\n";
  };
  add("lp", std::string("```lp\n") + kLpA + "```");
  add("py", py);
  add("wrong", std::string("```lp\n") + kLpA + "```");
  add("junk", "```python\ndef (:\n```");
  add("infeasible", "```lp\nMinimize\n obj: x\nSubject To\n c: x >= 5\n d: x <= 2\nEnd\n```");
  write_file_atomic(d.path + "/completions.jsonl", completions);
  ProcessResult r = trex({"eval", "run", "--bench", bench, "--id-field", "id", "--question-field", "q", "--answer-field", "a",
                          "--completions", d.path + "/completions.jsonl", "--out", d.path + "/out", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| bench | 6 | 1 | 50.0% | 50.0% | 3 | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 1 | 0 | 1 |"), std::string::npos) << r.out;
  std::map<std::string, std::string> cls;
  std::ifstream in(d.path + "/out/results.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    cls[j["id"]] = j["class"];
    EXPECT_EQ(j["mode"], "absolute");
  }
  EXPECT_EQ(cls["lp"], "correct");
  EXPECT_EQ(cls["py"], "correct");
  EXPECT_EQ(cls["wrong"], "wrong-objective");
  EXPECT_EQ(cls["junk"], "syntax-error");
  EXPECT_EQ(cls["silent"], "no-code");
  EXPECT_EQ(cls["infeasible"], "correct");
  for (const char* f : {"summary.json", "summary.md", "report.html"}) EXPECT_TRUE(fs::exists(d.path + "/out/" + f)) << f;
  std::string html = read_file(d.path + "/out/report.html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("<script src"), std::string::npos);  // self-contained
}

TEST(EvalCli, BadInputIsOneLineAndWritesNothing) {
  TempDir d;
  write_file_atomic(d.path + "/bench.jsonl", "{\"question\":\"q\",\"answer\":1}\n");
  write_file_atomic(d.path + "/c.jsonl", "{\"id\":\"1\",\"completion\":\"x\"}\n{\"id\":2}\n");
  ProcessResult mode = trex({"eval", "run", "--bench", d.path + "/bench.jsonl", "--completions", d.path + "/c.jsonl",
                             "--out", d.path + "/out", "--mode", "fuzzy"});
  EXPECT_EQ(mode.exit_code, 2);
  EXPECT_NE(mode.err.find("--mode"), std::string::npos) << mode.err;
  ProcessResult comp = trex({"eval", "run", "--bench", d.path + "/bench.jsonl", "--completions", d.path + "/c.jsonl",
                             "--out", d.path + "/out"});
  EXPECT_EQ(comp.exit_code, 2);
  EXPECT_NE(comp.err.find("c.jsonl:2:"), std::string::npos) << comp.err;
  ProcessResult bench = trex({"eval", "run", "--bench", "nosuch", "--completions", d.path + "/c.jsonl", "--out", d.path + "/out"});
  EXPECT_EQ(bench.exit_code, 2);
  EXPECT_NE(bench.err.find("--bench"), std::string::npos) << bench.err;
  EXPECT_FALSE(fs::exists(d.path + "/out"));
}

// An output file of another harness (ORLM's executed.jsonl): questions, answers and the code
// in one file, no id field; --code-field scores it as both the benchmark and the completions.
TEST(EvalCli, CodeFieldScoresAnOrlmStyleFile) {
  if (!program_available("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not installed";
  TempDir d;
  auto line = [](const std::string& answer, double ub) {
    std::string code = "Model:\n```python\nimport coptpy as cp\nfrom coptpy import COPT\nenv = cp.Envr()\n"
                       "model = env.createModel('m')\nx = model.addVar(ub=" + std::to_string(ub) + ", vtype=COPT.INTEGER)\n"
                       "model.setObjective(2 * x, sense=COPT.MAXIMIZE)\nmodel.solve()\n```\n";
    return nlohmann::json({{"en_question", "q"}, {"en_answer", answer}, {"code", code}}).dump() + "\n";
  };
  write_file_atomic(d.path + "/executed.jsonl", line("8.0", 4) + line("7", 4) + line("10", 5.5));
  std::vector<std::string> args = {"eval", "run", "--bench", d.path + "/executed.jsonl", "--question-field", "en_question",
                                   "--answer-field", "en_answer", "--completions", d.path + "/executed.jsonl",
                                   "--mode", "orlm", "--out", d.path + "/out", "--quiet"};
  std::vector<std::string> with_field = args;
  with_field.insert(with_field.end(), {"--code-field", "code"});
  ProcessResult r = trex(with_field);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 8 = 8; 8 is not within 5% of 7; 2 * 5 = 10 (x integer <= 5.5).
  EXPECT_NE(r.out.find("| executed | 3 | 1 | 66.7% | 66.7% | 2 | 1 |"), std::string::npos) << r.out;
  std::vector<std::string> no_field = args;
  no_field.insert(no_field.end(), {"--code-field", "answer_code"});
  ProcessResult bad = trex(no_field);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("executed.jsonl:1: no string field 'answer_code'"), std::string::npos) << bad.err;
}

// IndustryOR by name: the file comes from TREX_INDUSTRYOR (a fixture in its shape written
// here); without it, one line naming what is missing and exit 2.
TEST(EvalCli, IndustryOrByName) {
  if (!program_available("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not installed";
  TempDir d;
  write_file_atomic(d.path + "/IndustryOR.json", "{\"en_question\":\"Two goods...\",\"en_answer\":\"8.0\"}\n"
                                                   "{\"en_question\":\"A route...\",\"en_answer\":\"7\"}\n");
  std::string code = "```python\nimport coptpy as cp\nfrom coptpy import COPT\nenv = cp.Envr()\n"
                     "model = env.createModel('m')\nx = model.addVar(ub=4, vtype=COPT.INTEGER)\n"
                     "model.setObjective(2 * x, sense=COPT.MAXIMIZE)\nmodel.solve()\n```\n";
  std::string completions;
  for (const char* id : {"1", "2"}) completions += nlohmann::json({{"id", id}, {"completion", code}}).dump() + "\n";
  write_file_atomic(d.path + "/c.jsonl", completions);
  std::string env = std::string("TREX_INDUSTRYOR=") + d.path + "/IndustryOR.json";
  ProcessResult r = trex({"eval", "run", "--bench", "industryor", "--completions",
                                 d.path + "/c.jsonl", "--mode", "orlm", "--out", d.path + "/out", "--quiet", "--timeout", "120"},
                         {"/usr/bin/env", env});  // the timeout: a hang guard only
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| industryor | 2 | 1 | 50.0% |"), std::string::npos) << r.out;  // 8 = 8; 8 vs 7 is off by 14%
  ProcessResult shown = trex({"eval", "list"}, {"/usr/bin/env", env});
  EXPECT_NE(shown.out.find("industryor                2"), std::string::npos) << shown.out;
  ProcessResult given = trex({"eval", "list", "industryor=" + d.path + "/IndustryOR.json"});
  EXPECT_NE(given.out.find("industryor: 2 items"), std::string::npos) << given.out;
  ProcessResult none = trex({"eval", "run", "--bench", "industryor", "--completions", d.path + "/c.jsonl", "--out", d.path + "/none"},
                            {"/usr/bin/env", "-u", "TREX_INDUSTRYOR"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(std::count(none.err.begin(), none.err.end(), '\n'), 1) << none.err;
  EXPECT_NE(none.err.find("industryor: no data file given (set TREX_INDUSTRYOR=FILE"), std::string::npos) << none.err;
  ProcessResult absent = trex({"eval", "run", "--bench", "industryor=" + d.path + "/nope.json", "--completions",
                               d.path + "/c.jsonl", "--out", d.path + "/none"});
  EXPECT_EQ(absent.exit_code, 2);
  EXPECT_NE(absent.err.find("nope.json: IndustryOR data file (from --bench industryor=FILE) does not exist"),
            std::string::npos) << absent.err;
  EXPECT_FALSE(fs::exists(d.path + "/none"));
}

// TREX_PYC_CACHE names the folder of the warm interpreter's pyc cache (docs/eval.md): warm_pool.cc
// passes it to the interpreter, whose entries go there instead of the home folder (ctest's 0,
// no cache, is tested with the cache's code in tests/oreval/python/zygote_check.py).
TEST(EvalCli, ThePycCacheIsInTheFolderTrexPycCacheNames) {
  if (!oreval::missing_sandbox_layers().empty())
    GTEST_SKIP() << "a sandbox layer is missing (" << oreval::missing_sandbox_layers().front() << "): no warm interpreter";
  TempDir d;
  write_file_atomic(d.path + "/bench.jsonl", "{\"id\":\"py\",\"q\":\"max\",\"a\":3}\n");
  std::string py = "```python\nfrom gurobipy import Model, GRB\nmodel = Model()\nx = model.addVar(ub=3)\n"
                   "model.setObjective(x, GRB.MAXIMIZE)\nmodel.optimize()\nprint(model.ObjVal)\n```";
  write_file_atomic(d.path + "/completions.jsonl", nlohmann::json({{"id", "py"}, {"completion", py}}).dump() + "\n");
  std::string cache = d.path + "/pyc";
  ProcessResult r = trex({"eval", "run", "--bench", d.path + "/bench.jsonl", "--id-field", "id", "--question-field", "q",
                          "--answer-field", "a", "--completions", d.path + "/completions.jsonl", "--out", d.path + "/out",
                          "--quiet"},
                         {"/usr/bin/env", "TREX_PYC_CACHE=" + cache});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(read_file(d.path + "/out/results.jsonl").find("\"correct\""), std::string::npos);
  ASSERT_TRUE(fs::is_directory(cache));
  EXPECT_EQ(fs::status(cache).permissions() & fs::perms::all, fs::perms::owner_all);
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(cache)) ++entries;
  EXPECT_GT(entries, 0);  // one per compiled module of python/
}

// Where the programs' folders were is in the report a user reads (summary.md, summary.json):
// the workspace as root, and the fallback under $TMPDIR with its reason (here TREX_WORKSPACE=0),
// which is not a missing sandbox layer (docs/eval.md): the same layers, the same verdict.
TEST(EvalCli, TheReportSaysWhereTheProgramsFoldersWere) {
  if (!oreval::missing_sandbox_layers().empty())
    GTEST_SKIP() << "a sandbox layer is missing (" << oreval::missing_sandbox_layers().front() << "): no warm interpreter";
  TempDir d;
  write_file_atomic(d.path + "/bench.jsonl", "{\"id\":\"py\",\"q\":\"max\",\"a\":3}\n");
  std::string py = "```python\nfrom gurobipy import Model, GRB\nmodel = Model()\nx = model.addVar(ub=3)\n"
                   "model.setObjective(x, GRB.MAXIMIZE)\nmodel.optimize()\nprint(model.ObjVal)\n```";
  write_file_atomic(d.path + "/completions.jsonl", nlohmann::json({{"id", "py"}, {"completion", py}}).dump() + "\n");
  auto run = [&](const std::string& out, const std::string& workspace) {
    ProcessResult r = trex({"eval", "run", "--bench", d.path + "/bench.jsonl", "--id-field", "id", "--question-field", "q",
                            "--answer-field", "a", "--completions", d.path + "/completions.jsonl", "--out", d.path + "/" + out,
                            "--quiet"},
                           {"/usr/bin/env", "TREX_WORKSPACE=" + workspace});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(read_file(d.path + "/" + out + "/results.jsonl").find("\"correct\""), std::string::npos) << out;
    return nlohmann::json::parse(read_file(d.path + "/" + out + "/summary.json")).value("program_folders", std::string());
  };
  std::string without = run("without", "0");
  EXPECT_EQ(without, "under $TMPDIR (no workspace: TREX_WORKSPACE=0; the same sandbox layers)");
  EXPECT_NE(read_file(d.path + "/without/summary.md").find("- program folders: " + without + "\n"), std::string::npos);
  if (geteuid() == 0) EXPECT_EQ(run("with", "1"), "each warm interpreter's workspace tmpfs");
}

// The processes `pid`'s threads have forked, as the kernel lists them.
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& t : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(t.path() / "children");
    for (pid_t c; in >> c;) found.push_back(c);
  }
  return found;
}

// The text of /proc/PID/NAME, or "" where it cannot be read: the process may end between the
// open and the read, which then fails with ESRCH (an ifstream throws there: this test failed
// once so, at load 10, session 18).
std::string proc_text(pid_t pid, const char* name) {
  int fd = open(("/proc/" + std::to_string(pid) + "/" + name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, size_t(n));
  close(fd);
  return n < 0 ? std::string() : out;
}

// The system call `pid` is blocked in (/proc/PID/syscall's first field), or -1.
long blocked_in(pid_t pid) {
  std::string text = proc_text(pid, "syscall");
  return text.empty() || !isdigit(static_cast<unsigned char>(text[0])) ? -1 : std::stol(text);
}

// `trex eval run` on `n` LP items (no Python program), started in the background with TMPDIR=`tmp`
// and its output in `log`, so that the test can watch its warm interpreter while it runs.
pid_t start_lp_run(const std::string& dir, const std::string& tmp, int n, const std::vector<std::string>& env) {
  std::string bench, completions;
  for (int i = 0; i < n; ++i) {
    std::string id = "lp" + std::to_string(i);
    bench += nlohmann::json({{"id", id}, {"q", "max 3x+2y"}, {"a", "11"}}).dump() + "\n";
    completions += nlohmann::json({{"id", id}, {"completion", std::string("```lp\n") + kLpA + "```"}}).dump() + "\n";
  }
  write_file_atomic(dir + "/bench.jsonl", bench);
  write_file_atomic(dir + "/completions.jsonl", completions);
  std::vector<std::string> args = {"/usr/bin/env", "TMPDIR=" + tmp};
  args.insert(args.end(), env.begin(), env.end());
  std::vector<std::string> run = {TREX_BINARY, "eval", "run", "--bench", dir + "/bench.jsonl", "--id-field", "id",
                                  "--question-field", "q", "--answer-field", "a", "--completions",
                                  dir + "/completions.jsonl", "--out", dir + "/out", "--quiet"};
  args.insert(args.end(), run.begin(), run.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, (dir + "/log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  // A process group of its own, whose parent (this process) is outside it: stopping it (below)
  // then never makes an orphaned group with a stopped member, which the kernel ends with SIGHUP
  // when any process of the group exits (seen under ctest, whose group can be orphaned already).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &fa, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

bool ended(pid_t pid);

// Whether the warm interpreter `zygote` waits in its bootstrap for the evaluator's "copied"
// (warm_pool.cc kBootstrap: a read of the control socket, descriptor 10), and whether it is past
// that read: it opened the sandbox library (mapped, or blocked opening a FIFO in its place).
bool waits_for_its_copy(pid_t zygote) { return proc_text(zygote, "syscall").rfind("0 0xa ", 0) == 0; }
bool past_its_copy(pid_t zygote) {
  return ended(zygote) || blocked_in(zygote) == SYS_openat ||
         proc_text(zygote, "maps").find("libtrex_sandbox_enter") != std::string::npos;
}

// Waits (polling, up to two minutes) for the warm interpreter trex `run` starts, and stops
// trex (SIGSTOP) as soon as it is seen, so that the run cannot end before the test has looked
// at it. -1 when trex ended first (its status in `status`) or none appeared. trex writes the
// interpreter's module copy after the spawn and then sends it "copied", which its bootstrap
// waits for: where trex was stopped before that, it runs again until the interpreter has read
// it and is stopped at once after.
pid_t stop_at_its_warm_interpreter(pid_t run, int& status) {
  pid_t zygote = -1;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::minutes(2);
       zygote < 0 && std::chrono::steady_clock::now() < until;) {
    if (waitpid(run, &status, WNOHANG) == run) return -1;
    for (pid_t c : children_of(run))
      if (proc_text(c, "cmdline").find("trex_eval_zygote.py") != std::string::npos) {
        kill(run, SIGSTOP);
        zygote = c;
        break;
      }
    if (zygote < 0) usleep(200);
  }
  for (auto until = std::chrono::steady_clock::now() + std::chrono::minutes(2);
       zygote > 0 && !past_its_copy(zygote) && std::chrono::steady_clock::now() < until;) {
    if (waits_for_its_copy(zygote)) {
      kill(run, SIGCONT);
      while (waits_for_its_copy(zygote) && std::chrono::steady_clock::now() < until) usleep(20);
      kill(run, SIGSTOP);
      break;
    }
    usleep(200);
  }
  return zygote;
}

// Whether `pid` has ended (a zombie, or gone).
bool ended(pid_t pid) {
  std::string stat = proc_text(pid, "stat");
  size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z';
}

// Ends and reaps the run if a failed assertion left it (stopped, maybe) behind.
struct RunGuard {
  pid_t pid = -1;
  ~RunGuard() {
    if (pid > 0 && waitpid(pid, nullptr, WNOHANG) == 0) {
      kill(pid, SIGKILL);
      kill(pid, SIGCONT);
      waitpid(pid, nullptr, 0);
    }
  }
};

// Holds this process as the subreaper of its descendants for a test: a process that a warm
// interpreter leaves behind when it dies becomes this process's child (and is seen) instead of
// init's.
struct Subreaper {
  std::vector<pid_t> before = children_of(getpid());
  Subreaper() { prctl(PR_SET_CHILD_SUBREAPER, 1); }
  ~Subreaper() { prctl(PR_SET_CHILD_SUBREAPER, 0); }
  // Children this process got since, reaped (each a process left behind).
  std::vector<pid_t> adopted() {
    std::vector<pid_t> found;
    for (pid_t c : children_of(getpid()))
      if (std::find(before.begin(), before.end(), c) == before.end()) {
        kill(c, SIGKILL);
        waitpid(c, nullptr, 0);
        found.push_back(c);
      }
    return found;
  }
};

std::vector<std::string> entries_of(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir)) found.push_back(e.path().filename().string());
  return found;
}

// `trex eval run` starts the warm interpreter before it loads the benchmark (execute.h
// prestart_python). A run with no Python program never leases it. Here it is ready before the
// run ends (trex is held until the interpreter forked its waiting child and waits for a
// request): at exit it is closed and waited for like any idle interpreter, so that it reaps
// that child, which a kill would leave to init; its folder is gone with it.
TEST(EvalCli, ARunWithoutPythonLeavesNoWarmInterpreterBehind) {
  if (!oreval::missing_sandbox_layers().empty())
    GTEST_SKIP() << "a sandbox layer is missing (" << oreval::missing_sandbox_layers().front() << "): no warm interpreter";
  TempDir d;
  std::string tmp = d.path + "/tmp";
  fs::create_directories(tmp);
  Subreaper reaper;
  pid_t run = start_lp_run(d.path, tmp, 20, {});
  ASSERT_GT(run, 0);
  RunGuard guard{run};
  int status = 0;
  pid_t zygote = stop_at_its_warm_interpreter(run, status);
  ASSERT_GT(zygote, 0) << "no warm interpreter seen while the run was alive: " << read_file(d.path + "/log");
  std::vector<std::string> during = entries_of(tmp);
  ASSERT_EQ(during.size(), 1u);
  EXPECT_EQ(during[0].rfind("trex-warm-", 0), 0u) << during[0];
  // Ready: it forked its waiting child and blocks reading the next request (recvmsg).
  pid_t waiting = -1;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::minutes(2);
       waiting < 0 && !ended(zygote) && std::chrono::steady_clock::now() < until;) {
    std::vector<pid_t> kids = children_of(zygote);
    if (!kids.empty() && blocked_in(zygote) == SYS_recvmsg) waiting = kids[0];
    else usleep(200);
  }
  kill(run, SIGCONT);
  ASSERT_GT(waiting, 0) << "the warm interpreter never became ready";
  ASSERT_EQ(waitpid(run, &status, 0), run);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << " " << read_file(d.path + "/log");
  EXPECT_NE(read_file(d.path + "/out/results.jsonl").find("\"correct\""), std::string::npos);
  std::vector<std::string> left = entries_of(tmp);
  EXPECT_TRUE(left.empty()) << left.front();
  EXPECT_EQ(kill(zygote, 0), -1);  // reaped by trex
  std::vector<pid_t> adopted = reaper.adopted();
  EXPECT_TRUE(adopted.empty()) << "the warm interpreter's waiting child (" << waiting << ") was left behind: "
                               << adopted.front();
}

// One that is still starting when the run ends (here it blocks opening the sandbox library,
// a FIFO nobody writes) is killed at exit: nothing is left, the run's exit status is its own.
TEST(EvalCli, AWarmInterpreterStillStartingAtExitIsKilled) {
  if (!oreval::missing_sandbox_layers().empty())
    GTEST_SKIP() << "a sandbox layer is missing (" << oreval::missing_sandbox_layers().front() << "): no warm interpreter";
  TempDir d;
  std::string tmp = d.path + "/tmp";
  fs::create_directories(tmp);
  std::string fifo = d.path + "/libtrex_sandbox_enter.so";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Subreaper reaper;
  pid_t run = start_lp_run(d.path, tmp, 20, {"TREX_SANDBOX_ENTER_LIB=" + fifo});
  ASSERT_GT(run, 0);
  RunGuard guard{run};
  int status = 0;
  pid_t zygote = stop_at_its_warm_interpreter(run, status);
  ASSERT_GT(zygote, 0) << "no warm interpreter seen while the run was alive: " << read_file(d.path + "/log");
  bool blocked = false;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::minutes(2);
       !blocked && !ended(zygote) && std::chrono::steady_clock::now() < until;) {
    blocked = blocked_in(zygote) == SYS_openat;
    if (!blocked) usleep(200);
  }
  kill(run, SIGCONT);
  ASSERT_TRUE(blocked) << "the warm interpreter did not block opening " << fifo;
  ASSERT_EQ(waitpid(run, &status, 0), run);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << " " << read_file(d.path + "/log");
  EXPECT_NE(read_file(d.path + "/out/results.jsonl").find("\"correct\""), std::string::npos);
  std::vector<std::string> left = entries_of(tmp);
  EXPECT_TRUE(left.empty()) << left.front();
  EXPECT_EQ(kill(zygote, 0), -1);  // reaped by trex
  std::vector<pid_t> adopted = reaper.adopted();
  EXPECT_TRUE(adopted.empty()) << adopted.front();
}

TEST(EvalCli, List) {
  ProcessResult r = trex({"eval", "list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("b4o-orgeval"), std::string::npos);
  EXPECT_NE(r.out.find("industryor"), std::string::npos) << r.out;
  if (find_data("or-benchmarks").empty()) GTEST_SKIP() << "benchmark data not found";
  ProcessResult f = trex({"eval", "list", "b4o-feasible"});
  EXPECT_NE(f.out.find("344 items"), std::string::npos) << f.out;
  EXPECT_NE(f.out.find("reference programs: 87"), std::string::npos) << f.out;
}

}  // namespace
}  // namespace trex
