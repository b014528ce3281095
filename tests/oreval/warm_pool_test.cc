// The warm pool (issue 19) gives the verdicts the fresh-interpreter path gives, hostile
// programs included, and fails closed the same way when a layer cannot be applied. The hostile
// suite (hostile_test.cc) runs on the warm path, the default; these compare the two paths
// program by program.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "trex/oreval/evaluate.h"
#include "trex/oreval/execute.h"
#include "trex/oreval/sandbox.h"
#include "trex/oreval/short_slice.h"
#include "trex/oreval/warm_pool.h"
#include "trex/util/subprocess.h"

namespace trex::oreval {
namespace {

ExecOptions limits(bool warm) {
  ExecOptions o;
  o.python_dir = std::string(TREX_SOURCE_DIR) + "/python";
  o.limits.wall_s = 3;
  o.limits.cpu_s = 3;
  o.limits.memory_bytes = size_t(512) << 20;
  o.limits.output_bytes = size_t(64) << 10;
  o.limits.file_bytes = size_t(8) << 20;
  o.solve_time_limit_s = 5;
  o.max_solve_requests = 5;
  o.read_bytes = size_t(1) << 20;
  o.warm_pool = warm;
  return o;
}

#define REQUIRE_WHOLE_SANDBOX()                                                          \
  if (!program_available("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 missing"; \
  if (!missing_sandbox_layers().empty())                                                 \
  GTEST_SKIP() << "a sandbox layer is missing (" << missing_sandbox_layers().front() << "): the pool is not used"

// Programs that end on their own: the verdict, the message and the output must be the same.
const std::vector<std::pair<const char*, std::string>> kPrograms = {
    {"solves", "from gurobipy import Model, GRB, quicksum\nmodel = Model('t')\n"
               "x = model.addVars(3, vtype=GRB.INTEGER, ub=4, name='x')\n"
               "model.setObjective(quicksum((i + 1) * x[i] for i in range(3)), GRB.MAXIMIZE)\n"
               "model.addConstr(x.sum() <= 5, 'cap')\nmodel.optimize()\nprint(model.ObjVal, x[2].X)\n"},
    {"no model", "print('nothing')\n"},
    {"syntax error", "def f(:\n  pass\n"},
    {"raises", "raise ValueError('bad data')\n"},
    {"sys.exit(0) early", "import sys\nfrom gurobipy import Model\nm = Model()\nm.addVar()\nsys.exit(0)\n"},
    {"unsupported library", "import pyomo.environ\n"},
    {"model.lp", "open('model.lp', 'w').write('Maximize\\n obj: 3 x + 2 y\\nSubject To\\n c: x + y <= 4\\nEnd\\n')\n"},
    {"fork", "import os\nwhile True:\n    os.fork()\n"},
    {"subprocess", "import subprocess\nsubprocess.run(['/bin/true'])\n"},
    {"memory", "blocks = []\nwhile True:\n    blocks.append(bytes(64 << 20))\n"},
    {"output", "import sys\nline = 'x' * 1000 + '\\n'\nwhile True:\n    sys.stdout.write(line)\n"},
    {"big file", "with open('big', 'wb') as f:\n    f.write(bytes(200 << 20))\n"},
    {"read /etc/passwd", "print(open('/etc/passwd').read())\n"},
    {"read the source", "print(open('" TREX_SOURCE_DIR "/README.md').read())\n"},
    {"network", "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\ns.connect(('127.0.0.1', 22))\n"},
    {"kill parent", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"},
    {"kill all", "import os, signal\nos.kill(-1, signal.SIGKILL)\n"},
    {"own group", "import os, signal\nprint(os.getsid(0) == os.getpid(), os.getpgrp() == os.getpid())\n"
                  "signal.signal(signal.SIGUSR1, lambda *a: print('got it'))\nos.kill(0, signal.SIGUSR1)\n"},
    {"parent's /proc", "import os\ntry:\n    print(open('/proc/%d/environ' % os.getppid(), 'rb').read()[:64])\n"
                       "except OSError as e:\n    print(type(e).__name__, e.errno)\n"},
    {"raise limits", "import resource\nresource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n"},
    {"x32", "import ctypes\nlibc = ctypes.CDLL(None)\nprint(libc.syscall(0x40000000 + 39))\n"},
    {"symlink", "import os\nos.symlink('/etc/shadow', '__trex_final.json')\nos._exit(0)\n"},
    {"descriptors", "import os\nopen_fds = []\nfor fd in range(4, 4096):\n    try:\n        os.fstat(fd)\n"
                    "        open_fds.append(fd)\n    except OSError:\n        pass\nprint(open_fds)\n"},
    {"uid and env", "import os\nprint(os.getuid() != 0, sorted(os.environ), os.getcwd() == os.environ['HOME'])\n"},
    // The whole environment, in order (HOME is the program's own folder on each path).
    {"environment in order", "import os\nprint([(k, v == os.getcwd() if k == 'HOME' else v) for k, v in os.environ.items()])\n"},
    {"channel flood", "from gurobipy import Model\nm = Model()\nx = m.addVar(ub=1)\nm.setObjective(x, -1)\n"
                      "while True:\n    try:\n        m.optimize()\n    except Exception:\n        pass\n"},
    // The thread prints only once the main thread has (an event, not a sleep, so a loaded
    // machine cannot reorder the lines); it still runs on after the script's last line.
    {"atexit and threads", "import atexit, threading\natexit.register(lambda: print('at exit'))\n"
                           "e = threading.Event()\n"
                           "t = threading.Thread(target=lambda: (e.wait(), print('thread done')))\nt.start()\n"
                           "print('main done')\ne.set()\n"},
    // A warm child does not tear the interpreter down (trex_eval_zygote.finish); what the
    // program left for that teardown must still happen as in a fresh interpreter.
    {"file left open", "f = open('model.lp', 'w')\nf.write('Maximize\\n obj: 3 x\\nSubject To\\n c: x <= 4\\nEnd\\n')\n"},
    {"file left open, globals in a cycle", "f = open('model.lp', 'w')\n"
                                           "f.write('Maximize\\n obj: 3 x\\nSubject To\\n c: x <= 4\\nEnd\\n')\n"
                                           "def keep():\n    return f\n"},
    {"finaliser in a cycle", "class A:\n    def __del__(self):\n        print('finalised')\na = A()\na.me = a\n"},
    {"exit status from atexit", "import atexit, sys\natexit.register(lambda: sys.stdout.write('bye\\n'))\nraise SystemExit(3)\n"},
};

// None of these needs the wall clock to stop it, so the clock is generous: a loaded machine
// must not turn a verdict into a timeout on one path only.
ExecOptions roomy(bool warm) {
  ExecOptions o = limits(warm);
  o.limits.wall_s = 120;
  o.limits.cpu_s = 120;
  return o;
}

TEST(WarmPool, SameVerdictsAsFreshInterpreters) {
  REQUIRE_WHOLE_SANDBOX();
  for (const auto& [name, code] : kPrograms) {
    Execution cold = execute({CodeKind::kPython, code}, "", roomy(false));
    Execution warm = execute({CodeKind::kPython, code}, "", roomy(true));
    EXPECT_STREQ(to_string(warm.status), to_string(cold.status)) << name << ": " << warm.message << " | " << cold.message;
    EXPECT_EQ(warm.message, cold.message) << name;
    EXPECT_EQ(warm.output, cold.output) << name;
    EXPECT_EQ(warm.solve_requests, cold.solve_requests) << name;
    EXPECT_EQ(bool(warm.model), bool(cold.model)) << name;
    EXPECT_EQ(bool(warm.final_solve), bool(cold.final_solve)) << name;
    if (warm.final_solve && cold.final_solve) {
      EXPECT_EQ(warm.final_solve->objective, cold.final_solve->objective) << name;
    }
    // What a fresh interpreter's teardown does for these, the warm child must do too.
    // Left open in the program's globals, the file is flushed when they go; when the globals
    // are in a reference cycle, Python 3.11 finalises the cycle's text and buffer objects in an
    // order that loses the buffered text (bpo-17852): on both paths alike, as compared above.
    if (std::string(name) == "file left open") {
      EXPECT_TRUE(warm.model && cold.model) << "the unclosed model.lp was not flushed";
    }
    if (std::string(name) == "finaliser in a cycle") {
      EXPECT_EQ(warm.output, "finalised\n");
    }
    if (std::string(name) == "exit status from atexit") {
      EXPECT_EQ(warm.output, "bye\n");
    }
  }
}

// Programs stopped by a limit: the same verdict (which limit struck first may differ, so the
// message is not compared), within the wall clock.
TEST(WarmPool, SameVerdictsForProgramsThatMustBeStopped) {
  REQUIRE_WHOLE_SANDBOX();
  for (const char* code : {"while True:\n    pass\n", "import time\ntime.sleep(60)\n",
                           "import os\nos.close(1)\nos.close(2)\nimport time\ntime.sleep(60)\n"}) {
    Execution cold = execute({CodeKind::kPython, code}, "", limits(false));
    Execution warm = execute({CodeKind::kPython, code}, "", limits(true));
    EXPECT_STREQ(to_string(warm.status), "timeout") << code << warm.message;
    EXPECT_STREQ(to_string(cold.status), "timeout") << code << cold.message;
    EXPECT_LT(warm.seconds, limits(true).limits.wall_s + 15) << code;
  }
}

// The warm path is the one taken: the modules are already imported when the program starts,
// and one interpreter serves programs run one after another.
TEST(WarmPool, ProgramsRunInAForkOfOneWarmInterpreter) {
  REQUIRE_WHOLE_SANDBOX();
  const std::string probe = "import sys\nprint('gurobipy' in sys.modules)\n";
  Execution cold = execute({CodeKind::kPython, probe}, "", limits(false));
  EXPECT_EQ(cold.output, "False\n") << cold.message;
  Execution first = execute({CodeKind::kPython, probe}, "", limits(true));
  EXPECT_EQ(first.output, "True\n") << first.message;
  int started = warm_interpreters_started();
  for (int i = 0; i < 3; ++i) {
    Execution again = execute({CodeKind::kPython, probe}, "", limits(true));
    EXPECT_EQ(again.output, "True\n") << again.message;
  }
  EXPECT_EQ(warm_interpreters_started(), started);
}

// launch() leaves the child's three descriptors open: run_sandboxed closes them once, as after
// a fork. A launcher that closed them too closed them twice, and the second close hit whatever
// another worker thread had opened under the same numbers meanwhile (EBADF on a completion's
// write, seen with --jobs 2).
TEST(WarmPool, LaunchLeavesTheChildsDescriptorsToTheCaller) {
  REQUIRE_WHOLE_SANDBOX();
  ExecOptions o = limits(true);
  WarmLease lease(o.python, o.python_dir);
  struct Checking final : SandboxLauncher {
    SandboxLauncher* inner = nullptr;
    bool open_after_launch = false;
    pid_t launch(const SandboxSpec& spec, int out_fd, int err_fd, int channel_fd) override {
      pid_t pid = inner->launch(spec, out_fd, err_fd, channel_fd);
      open_after_launch = fcntl(out_fd, F_GETFD) != -1 && fcntl(err_fd, F_GETFD) != -1 &&
                          fcntl(channel_fd, F_GETFD) != -1;
      return pid;
    }
    int reap(pid_t pid, double seconds_left, bool& timed_out, const std::function<void()>& meanwhile) override {
      return inner->reap(pid, seconds_left, timed_out, meanwhile);
    }
  } checking;
  checking.inner = lease.launcher();
  std::string dir = (std::filesystem::temp_directory_path() / "trex-warm-fds-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  {
    FILE* f = fopen((dir + "/completion.py").c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs("print('ran')\n", f);
    fclose(f);
  }
  SandboxSpec spec;
  spec.argv = {o.python, "-I", "-B", lease.runner(), "completion.py"};
  spec.env = {"PATH=/usr/bin:/bin", "HOME=" + dir, "LANG=C.UTF-8", "TREX_EVAL_CHANNEL_FD=3"};
  spec.workdir = dir;
  spec.read_only_paths = {"/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", lease.module_dir()};
  spec.limits = o.limits;
  SandboxResult r = run_sandboxed(spec, {}, &checking);
  EXPECT_TRUE(checking.open_after_launch);
  EXPECT_NE(r.out.find("ran"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

// An interpreter forks each next program's child while the current program runs only where
// every worker has a CPU beside it that it leaves idle (warm_fork_early), and the evaluator says
// which on the interpreter's command line (FORK_EARLY, python/trex_eval_zygote.py).
std::vector<std::string> command_line_of_interpreter(const std::string& module_dir) {
  std::string zygote = module_dir + "/trex_eval_zygote.py";
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string text;
    if (FILE* f = fopen((e.path() / "cmdline").c_str(), "r")) {
      char buf[4096];
      size_t n;
      while ((n = fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
      fclose(f);
    }
    std::vector<std::string> args;
    for (size_t at = 0; at < text.size();) {
      size_t end = text.find('\0', at);
      if (end == std::string::npos) end = text.size();
      args.push_back(text.substr(at, end - at));
      at = end + 1;
    }
    if (args.size() > 3 && args[3] == zygote) return args;
    // With a workspace the script is run by the bootstrap (python3 -I -B -c CODE ARGS... WORKSPACE
    // FD, warm_pool.cc), from WORKSPACE/module: returned as the script's own command line.
    if (args.size() > 10 && args[3] == "-c" && args[10] + "/module" == module_dir) {
      args.erase(args.begin() + 4);
      args[3] = zygote;
      return args;
    }
  }
  return {};
}

TEST(WarmPool, InterpretersForkEarlyOnlyWithAnIdleCpuBesideEachWorker) {
  EXPECT_FALSE(warm_fork_early(0, 64));  // the workers not known
  EXPECT_TRUE(warm_fork_early(1, 2));
  EXPECT_TRUE(warm_fork_early(2, 4));
  EXPECT_FALSE(warm_fork_early(2, 3));
  EXPECT_FALSE(warm_fork_early(1, 1));
  EXPECT_FALSE(warm_fork_early(1 << 30, 64));  // no overflow (2 * workers would be)
  EXPECT_FALSE(warm_fork_early(2147483647, 2147483647));
  REQUIRE_WHOLE_SANDBOX();
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  int cpus = CPU_COUNT(&set);
  ExecOptions o = limits(true);
  for (int workers : {1, 1 << 20}) {
    warm_pool_set_workers(workers);
    // Leases held until one is of an interpreter started now (the pool's idle ones were
    // started before, with another setting).
    std::vector<std::unique_ptr<WarmLease>> held;
    int started = warm_interpreters_started();
    while (warm_interpreters_started() == started && held.size() < 16)
      held.push_back(std::make_unique<WarmLease>(o.python, o.python_dir));
    ASSERT_GT(warm_interpreters_started(), started);
    std::vector<std::string> args = command_line_of_interpreter(held.back()->module_dir());
    // With a workspace (root), its folder and descriptor's number follow (workspace.h).
    bool workspace = held.back()->workspace_fd() >= 0;
    ASSERT_EQ(args.size(), workspace ? 11u : 9u);
    EXPECT_EQ(args[8], warm_fork_early(workers, cpus) ? "1" : "0") << workers << " workers, " << cpus << " CPUs";
    if (workspace) {
      EXPECT_EQ(args[9], held.back()->workspace_dir());
    }
  }
  warm_pool_set_workers(0);
}

// A layer that cannot be applied stops the child before the program runs, on both paths: an
// open-file limit above the kernel's ceiling makes setrlimit fail in the child.
TEST(WarmPool, ALayerThatFailsStopsTheChildOnBothPaths) {
  REQUIRE_WHOLE_SANDBOX();
  for (bool warm : {false, true}) {
    ExecOptions o = limits(warm);
    o.limits.open_files = 1 << 30;
    Execution e = execute({CodeKind::kPython, "print('ran')\nopen('ran', 'w').write('x')\n"}, "", o);
    EXPECT_STREQ(to_string(e.status), "runtime-error") << warm;
    EXPECT_EQ(e.message, "trex sandbox: setrlimit: Operation not permitted") << warm;
    EXPECT_EQ(e.output, "") << warm;
  }
}

// The child forked ahead of its request makes its session and namespaces while it waits; when
// it cannot, it runs nothing, says why on the program's stderr and exits 126 (fail closed), and
// when it could, it tells the library so. tests/oreval/python/zygote_check.py, with a stand-in
// for the sandbox library so that the failure is caused without changing the machine.
TEST(WarmPool, AWaitingChildThatCannotMakeItsNamespacesRunsNothing) {
  if (!program_available("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not installed";
  std::string py = std::string(TREX_SOURCE_DIR) + "/python";
  ProcessOptions po;
  po.timeout_s = 300;  // a hang guard only (the checks take 60-80 s at load 19 on 2 cores)
  // The real library for the C loop's checks (ServeInC); the sandbox is a stand-in there too.
  ProcessResult r = run_process({"/usr/bin/env", "PYTHONPATH=" + py, "TREX_SANDBOX_ENTER_LIB=" + sandbox_enter_library(),
                                 "/usr/bin/python3", "-B",
                                 std::string(TREX_SOURCE_DIR) + "/tests/oreval/python/zygote_check.py"},
                                po);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("Ran 61 tests"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\nOK"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("skipped"), std::string::npos) << r.err;  // ServeInC found the library
}

// The interpreters 3.12 and later that pyenv holds ($PYENV_ROOT, else ~/.pyenv): the machine's
// own python3 may be older, and 3.12 changed what the zygote's start relies on (_sha256 went
// into _sha2, cpython #101924: every warm run failed there, reviewer 5).
std::vector<std::string> pythons_3_12_or_later() {
  const char* root = getenv("PYENV_ROOT");
  const char* home = getenv("HOME");
  std::string dir = root ? std::string(root) : std::string(home ? home : "") + "/.pyenv";
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/versions", ec)) {
    int major = 0, minor = 0;
    if (sscanf(e.path().filename().c_str(), "%d.%d", &major, &minor) != 2) continue;
    std::string py = e.path().string() + "/bin/python3";
    if ((major > 3 || (major == 3 && minor >= 12)) && program_available(py)) found.push_back(py);
  }
  std::sort(found.begin(), found.end());
  return found;
}

// An interpreter started ahead (prestart_python, as `trex eval run` does before it loads the
// benchmark) is the one the first program runs in: no second start, and a second prestart
// while it is idle starts none. The module folder is a copy of python/ of this test's own, so
// that no interpreter another test left idle in this process has the same key.
TEST(WarmPool, TheFirstProgramRunsInThePrestartedInterpreter) {
  REQUIRE_WHOLE_SANDBOX();
  std::string dir = (std::filesystem::temp_directory_path() / "trex-prestart-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  std::filesystem::copy(std::string(TREX_SOURCE_DIR) + "/python", dir + "/python",
                        std::filesystem::copy_options::recursive);
  ExecOptions o = roomy(true);
  o.python_dir = dir + "/python";
  int before = warm_interpreters_started();
  prestart_python(o);
  EXPECT_EQ(warm_interpreters_started(), before + 1);
  prestart_python(o);  // one idle already: nothing more
  EXPECT_EQ(warm_interpreters_started(), before + 1);
  Execution first = execute({CodeKind::kPython, "import sys\nprint('gurobipy' in sys.modules)\n"}, "", o);
  EXPECT_EQ(first.status, ExecStatus::kNoModel) << first.message;
  EXPECT_EQ(first.output, "True\n") << first.message;
  EXPECT_EQ(warm_interpreters_started(), before + 1);
  std::filesystem::remove_all(dir);
}

// warm_pool_release_idle (what `trex eval run` calls once every program has run, before it
// writes the report) tells the idle interpreters to exit: a program after it runs in a new
// interpreter, warm, with the same verdict; one started ahead and never leased goes too.
TEST(WarmPool, ReleasedInterpretersAreNotLeasedAgain) {
  REQUIRE_WHOLE_SANDBOX();
  std::string dir = (std::filesystem::temp_directory_path() / "trex-release-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  std::filesystem::copy(std::string(TREX_SOURCE_DIR) + "/python", dir + "/python",
                        std::filesystem::copy_options::recursive);
  ExecOptions o = roomy(true);
  o.python_dir = dir + "/python";
  const std::string probe = "import sys\nprint('gurobipy' in sys.modules)\n";
  int before = warm_interpreters_started();
  Execution first = execute({CodeKind::kPython, probe}, "", o);
  EXPECT_EQ(first.output, "True\n") << first.message;
  EXPECT_EQ(warm_interpreters_started(), before + 1);
  warm_pool_release_idle();
  Execution second = execute({CodeKind::kPython, probe}, "", o);
  EXPECT_EQ(second.status, first.status) << second.message;
  EXPECT_EQ(second.output, "True\n") << second.message;
  EXPECT_EQ(warm_interpreters_started(), before + 2);
  prestart_python(o);  // idle: the one the second program ran in; nothing started
  EXPECT_EQ(warm_interpreters_started(), before + 2);
  warm_pool_release_idle();
  prestart_python(o);  // none idle now: one started ahead, released before its "ready" maybe
  EXPECT_EQ(warm_interpreters_started(), before + 3);
  warm_pool_release_idle();
  Execution third = execute({CodeKind::kPython, probe}, "", o);
  EXPECT_EQ(third.output, "True\n") << third.message;
  EXPECT_EQ(warm_interpreters_started(), before + 4);
  std::filesystem::remove_all(dir);
}

// As root, a warm interpreter's programs run in folders on its workspace tmpfs (workspace.h):
// the folder is the program's working directory and HOME at a path that exists only in the
// interpreter's mount namespace, and the evaluator empties it through its descriptor once the
// program is reaped, whatever it left there.
TEST(WarmPool, ProgramsRunInFoldersOfTheInterpretersWorkspace) {
  REQUIRE_WHOLE_SANDBOX();
  if (geteuid() != 0) GTEST_SKIP() << "not root: no workspace (the folders stay under $TMPDIR)";
  ExecOptions o = roomy(true);
  std::string dir;
  {
    WarmLease lease(o.python, o.python_dir);
    ASSERT_GE(lease.workspace_fd(), 0) << "root made no workspace";
    dir = lease.workspace_dir();
    EXPECT_EQ(lease.module_dir(), dir + "/module");  // the module copy is there too
    EXPECT_FALSE(std::filesystem::exists(lease.runner()));  // on no path of the evaluator's
  }
  Execution ex = execute({CodeKind::kPython, "import os\nprint(os.getcwd())\nprint(os.environ['HOME'] == os.getcwd())\n"
                                             "os.makedirs('a/b/c')\nopen('a/b/c/left', 'wb').write(bytes(1 << 20))\n"
                                             "try:\n    os.listdir('..')\n    print('listed the workspace')\n"
                                             "except OSError:\n    print('refused')\n"},
                         "", o);
  ASSERT_EQ(ex.status, ExecStatus::kNoModel) << ex.message << ex.output;
  std::string cwd = ex.output.substr(0, ex.output.find('\n'));
  EXPECT_EQ(cwd.rfind(dir + "/p", 0), 0u) << ex.output;
  EXPECT_NE(ex.output.find("\nTrue\nrefused\n"), std::string::npos) << ex.output;  // nothing of the others
  EXPECT_FALSE(std::filesystem::exists(cwd)) << "the workspace is mounted where the evaluator sees it";
  WarmLease again(o.python, o.python_dir);  // the same interpreter: its workspace is empty again
  ASSERT_EQ(again.workspace_dir(), dir);
  // The mount's descriptor is O_PATH (fsmount), which readdir refuses (EBADF): the folder is
  // opened through it for reading, and a failed read fails the test rather than listing nothing.
  int folder = openat(again.workspace_fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(folder, 0) << strerror(errno);
  DIR* listing = fdopendir(folder);
  ASSERT_NE(listing, nullptr) << strerror(errno);
  std::vector<std::string> left;
  bool module_copy = false;
  errno = 0;
  while (dirent* e = readdir(listing)) {
    std::string name = e->d_name;
    if (name == "module")
      module_copy = true;  // the interpreter's own, not a program's: it stays
    else if (name != "." && name != "..")
      left.push_back(name);
  }
  int read_error = errno;
  closedir(listing);
  ASSERT_EQ(read_error, 0) << "readdir: " << strerror(read_error);
  EXPECT_TRUE(module_copy) << "the listing missed the module copy: it did not read the workspace";
  EXPECT_TRUE(left.empty()) << left.size() << " left, first " << left.front();
}

// TREX_WORKSPACE=0 (as where no workspace can be made: trex not root, a kernel without the mount
// API) keeps the programs' folders under $TMPDIR, every layer as before. A copy of python/ of
// this test's own, so that the interpreter is started with the setting.
TEST(WarmPool, WithoutAWorkspaceTheFoldersStayUnderTmpdir) {
  REQUIRE_WHOLE_SANDBOX();
  std::string dir = (std::filesystem::temp_directory_path() / "trex-noworkspace-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  std::filesystem::copy(std::string(TREX_SOURCE_DIR) + "/python", dir + "/python",
                        std::filesystem::copy_options::recursive);
  ExecOptions o = roomy(true);
  o.python_dir = dir + "/python";
  setenv("TREX_WORKSPACE", "0", 1);
  {
    WarmLease lease(o.python, o.python_dir);
    EXPECT_EQ(lease.workspace_fd(), -1);
  }
  unsetenv("TREX_WORKSPACE");
  Execution ex = execute({CodeKind::kPython, "import os, sys\nprint(os.getcwd())\nprint('gurobipy' in sys.modules)\n"}, "", o);
  ASSERT_EQ(ex.status, ExecStatus::kNoModel) << ex.message << ex.output;
  std::string tmp = (std::filesystem::temp_directory_path() / "trex-eval-").string();
  EXPECT_EQ(ex.output.rfind(tmp, 0), 0u) << ex.output;
  EXPECT_NE(ex.output.find("\nTrue\n"), std::string::npos) << ex.output;  // the warm path
  std::filesystem::remove_all(dir);
}

// Fail closed where the once-per-process check (warm_pool.cc open_workspace) let a workspace be
// made but the interpreter's bootstrap is then refused the attach: the interpreter exits 125
// having said why, and the item is a runtime error that says so: the program is never run, in
// that interpreter or without it (nothing falls back to folders under $TMPDIR here). The refusal comes from a stand-in for the sandbox library
// (refusing_workspace_attach.cc), which only the bootstrap loads: the check is the evaluator's
// own code and passes. A copy of python/ of this test's own: an interpreter of its own key.
TEST(WarmPool, AnInterpreterThatCannotAttachItsWorkspaceRunsNothing) {
  REQUIRE_WHOLE_SANDBOX();
  if (geteuid() != 0) GTEST_SKIP() << "not root: no workspace is made, so none is attached";
  std::string dir = (std::filesystem::temp_directory_path() / "trex-refused-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  std::filesystem::copy(std::string(TREX_SOURCE_DIR) + "/python", dir + "/python",
                        std::filesystem::copy_options::recursive);
  Benchmark b;
  b.name = "refused";
  b.items.push_back({"print", "q", {AnswerKind::kNumber, 1}, "", "", ""});
  // Run, it would end as no-model; only an item that never ran ends as "error" (evaluate_one).
  std::vector<Completion> cs = {{"print", 0, "```python\nprint(1)\n```"}};
  EvalOptions o;
  o.jobs = 1;
  o.exec = roomy(true);
  o.exec.python_dir = dir + "/python";
  int before = warm_interpreters_started();
  setenv("TREX_SANDBOX_ENTER_LIB", TREX_REFUSING_ATTACH_LIB, 1);
  std::vector<ItemResult> r = evaluate(b, cs, o);
  unsetenv("TREX_SANDBOX_ENTER_LIB");
  EXPECT_GT(warm_interpreters_started(), before);  // the warm path was taken, not the fresh one
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].error, ErrorClass::kRuntimeError) << r[0].status << " " << r[0].message;
  EXPECT_EQ(r[0].status, "error");
  const std::string& m = r[0].message;
  EXPECT_NE(m.find("warm interpreter: cannot attach its workspace: move_mount: refused by the test's stand-in library"),
            std::string::npos) << m;
  EXPECT_NE(m.find("(it exited with status 125)"), std::string::npos) << m;
  EXPECT_NE(m.find("no program runs without it"), std::string::npos) << m;
  std::filesystem::remove_all(dir);
}

// The same refusal through `trex eval run`: the run still exits 0 and scores the item (it
// counts as failed), and besides each item's line in results.jsonl, one line on stderr says
// that trex could not score it and why (report.h unscored_items_note).
TEST(WarmPool, ARunWhoseItemsAllFailTheirWorkspaceSaysSoOnce) {
  REQUIRE_WHOLE_SANDBOX();
  if (geteuid() != 0) GTEST_SKIP() << "not root: no workspace is made, so none is attached";
  std::string dir = (std::filesystem::temp_directory_path() / "trex-refused-run-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  {
    std::FILE* f = std::fopen((dir + "/bench.jsonl").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("{\"id\":\"a\",\"question\":\"q\",\"answer\":1}\n{\"id\":\"b\",\"question\":\"q\",\"answer\":2}\n", f);
    std::fclose(f);
    f = std::fopen((dir + "/completions.jsonl").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("{\"id\":\"a\",\"completion\":\"```python\\nprint(1)\\n```\"}\n"
               "{\"id\":\"b\",\"completion\":\"```python\\nprint(2)\\n```\"}\n", f);
    std::fclose(f);
  }
  ProcessOptions po;
  po.timeout_s = 120;  // a hang guard only
  ProcessResult r = run_process({"/usr/bin/env", std::string("TREX_SANDBOX_ENTER_LIB=") + TREX_REFUSING_ATTACH_LIB,
                                 TREX_BINARY, "eval", "run", "--bench", dir + "/bench.jsonl", "--id-field", "id",
                                 "--completions", dir + "/completions.jsonl", "--jobs", "1", "--out", dir + "/out",
                                 "--quiet"},
                                po);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| bench | 2 | 1 | 0.0% | 0.0% | 0 |"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("trex eval: 2 of 2 items could not be scored (status \"error\" in results.jsonl): warm "
                       "interpreter: cannot attach its workspace: move_mount: refused by the test's stand-in library"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  std::filesystem::remove_all(dir);
}

// A prestart that cannot start anything throws nothing and starts nothing; the program that
// would have used it gets the error it got before (the lease's own start fails the same way).
TEST(WarmPool, APrestartThatFailsLeavesTheErrorToTheFirstProgram) {
  REQUIRE_WHOLE_SANDBOX();
  ExecOptions o = roomy(true);
  o.python = "/nonexistent/python3";
  int before = warm_interpreters_started();
  EXPECT_NO_THROW(prestart_python(o));
  EXPECT_EQ(warm_interpreters_started(), before);
  EXPECT_THROW(execute({CodeKind::kPython, "print(1)\n"}, "", o), std::runtime_error);
}

// The slice the kernel reports for task `tid` (0: this thread), or -1 where it cannot be read.
long long slice_of(pid_t tid) {
  struct {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
  } attr;  // struct sched_attr, first version (48 bytes)
  std::memset(&attr, 0, sizeof(attr));
  if (syscall(SYS_sched_getattr, tid, &attr, unsigned(sizeof(attr)), 0u) != 0) return -1;
  return (long long)attr.runtime;
}

// Gives the calling thread the kernel's default slice again (sched_runtime 0 clears a custom
// one), keeping its policy and nice value: a thread inherits its creator's slice, and an earlier
// test of this process may have leased on the thread that creates the next one.
bool default_slice_on_this_thread() {
  struct {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
  } attr;  // struct sched_attr, first version (48 bytes)
  std::memset(&attr, 0, sizeof(attr));
  if (syscall(SYS_sched_getattr, 0, &attr, unsigned(sizeof(attr)), 0u) != 0) return false;
  attr.size = sizeof(attr);
  attr.runtime = 0;
  return syscall(SYS_sched_setattr, 0, &attr, 0u) == 0;
}

// This process's children that are warm interpreters (python3 -I -B running the zygote's script,
// or the bootstrap that runs it from the workspace: warm_pool.cc), by pid, from every thread's
// /proc/self/task/TID/children.
std::vector<pid_t> warm_interpreters_of_this_process() {
  std::vector<pid_t> found;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream children(task.path() / "children");
    for (pid_t pid; children >> pid;) {
      std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
      std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
      if (text.find("trex_eval_zygote") != std::string::npos || text.find("trex_sandbox_attach_workspace") != std::string::npos)
        found.push_back(pid);
    }
  }
  return found;
}

// Fail closed where the module copy, written after the interpreter's spawn (bc52252: the
// bootstrap waits for "copied"), cannot be written: the interpreter, spawned and waiting, is
// killed and reaped, its folder removed, and the item is an error that says why; no program runs
// and no process is left (this process is the subreaper of its descendants meanwhile, so one
// left behind would be its child). The copy fails for want of inodes: a copy of python/ with more
// module files than the workspace tmpfs holds (kWorkspaceInodes), an interpreter of its own key.
TEST(WarmPool, AnInterpreterWhoseModuleCopyFailsAfterItsSpawnRunsNothing) {
  REQUIRE_WHOLE_SANDBOX();
  if (geteuid() != 0) GTEST_SKIP() << "not root: no workspace is made, so the copy is written before the spawn";
  std::string dir = (std::filesystem::temp_directory_path() / "trex-copy-fails-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  std::filesystem::copy(std::string(TREX_SOURCE_DIR) + "/python", dir + "/python",
                        std::filesystem::copy_options::recursive);
  std::filesystem::create_directories(dir + "/python/gurobipy/padding");
  for (int i = 0; i < 4200; ++i) std::ofstream(dir + "/python/gurobipy/padding/p" + std::to_string(i) + ".py");
  std::filesystem::create_directories(dir + "/tmp");
  Benchmark b;
  b.name = "copy";
  b.items.push_back({"print", "q", {AnswerKind::kNumber, 1}, "", "", ""});
  // Had it run, it would end as no-model; only an item that never ran ends as "error".
  std::vector<Completion> cs = {{"print", 0, "```python\nprint(1)\n```"}};
  EvalOptions o;
  o.jobs = 1;
  o.exec = roomy(true);
  o.exec.python_dir = dir + "/python";
  int before = warm_interpreters_started();
  const char* tmpdir = getenv("TMPDIR");
  std::string kept = tmpdir ? tmpdir : "";
  setenv("TMPDIR", (dir + "/tmp").c_str(), 1);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::vector<ItemResult> r = evaluate(b, cs, o);
  std::vector<pid_t> left = warm_interpreters_of_this_process();
  prctl(PR_SET_CHILD_SUBREAPER, 0);
  if (tmpdir) setenv("TMPDIR", kept.c_str(), 1);
  else unsetenv("TMPDIR");
  EXPECT_GT(warm_interpreters_started(), before);  // spawned: the copy failed after the spawn
  EXPECT_TRUE(left.empty()) << "a warm interpreter was left running: " << left.front();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].error, ErrorClass::kRuntimeError) << r[0].status << " " << r[0].message;
  EXPECT_EQ(r[0].status, "error");
  const std::string& m = r[0].message;
  EXPECT_EQ(m.rfind("warm interpreter: cannot write its module copy: cannot create ", 0), 0u) << m;
  EXPECT_NE(m.find(": No space left on device; no program runs without it"), std::string::npos) << m;
  EXPECT_TRUE(std::filesystem::is_empty(dir + "/tmp"));  // the interpreter's folder went with it
  std::filesystem::remove_all(dir);
}

// Both sides of a warm program's five passes ask for the short slice (short_slice.h): the thread
// that leases an interpreter (WarmLease) and the interpreter (its children inherit it). Each
// request is checked where the kernel keeps custom slices; removing either fails here.
TEST(WarmPool, LeasingThreadAndInterpreterAskForTheShortSlice) {
  REQUIRE_WHOLE_SANDBOX();
  if (const char* env = getenv("TREX_SHORT_SLICE"); env && std::string(env) == "0")
    GTEST_SKIP() << "TREX_SHORT_SLICE=0 turns the slice off";
  // Whether this kernel keeps one for SCHED_OTHER, asked in a child: this thread keeps its own.
  pid_t probe = fork();
  if (probe == 0) _exit(request_short_slice(0) && slice_of(0) == (long long)kShortSliceNs ? 0 : 1);
  int status = 0;
  ASSERT_EQ(waitpid(probe, &status, 0), probe);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) GTEST_SKIP() << "this kernel keeps no custom slice for SCHED_OTHER";
  // Leased on a thread of its own, whose slice is the default before the lease.
  long long before = -2, after = -2;
  std::thread leasing([&] {
    if (default_slice_on_this_thread()) before = slice_of(0);
    ExecOptions o = limits(true);
    WarmLease lease(o.python, o.python_dir);
    after = slice_of(0);
  });
  leasing.join();
  EXPECT_NE(before, (long long)kShortSliceNs) << "the thread had the short slice before its lease: nothing is checked";
  EXPECT_EQ(after, (long long)kShortSliceNs) << "the leasing thread";
  std::vector<pid_t> interpreters = warm_interpreters_of_this_process();
  ASSERT_FALSE(interpreters.empty()) << "no warm interpreter found among this process's children";
  for (pid_t pid : interpreters) EXPECT_EQ(slice_of(pid), (long long)kShortSliceNs) << "interpreter " << pid;
}

// The zygote's checks (the cache among them) under every 3.12+ interpreter found.
TEST(WarmPool, TheZygoteChecksPassUnderPython312AndLater) {
  std::vector<std::string> pythons = pythons_3_12_or_later();
  if (pythons.empty()) GTEST_SKIP() << "skipped: no 3.12+ interpreter (none in $PYENV_ROOT or ~/.pyenv/versions)";
  std::string py = std::string(TREX_SOURCE_DIR) + "/python";
  for (const std::string& python : pythons) {
    ProcessOptions po;
    po.timeout_s = 300;  // a hang guard only (the checks take 60-80 s at load 19 on 2 cores)
    ProcessResult r = run_process({"/usr/bin/env", "PYTHONPATH=" + py, "TREX_SANDBOX_ENTER_LIB=" + sandbox_enter_library(),
                                   python, "-B",
                                   std::string(TREX_SOURCE_DIR) + "/tests/oreval/python/zygote_check.py"},
                                  po);
    EXPECT_EQ(r.exit_code, 0) << python << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("Ran 61 tests"), std::string::npos) << python << "\n" << r.err;
    EXPECT_NE(r.err.find("\nOK"), std::string::npos) << python << "\n" << r.err;
    EXPECT_EQ(r.err.find("skipped"), std::string::npos) << python << "\n" << r.err;
  }
}

}  // namespace
}  // namespace trex::oreval
