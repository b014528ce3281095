// Hostile completions are contained and classified, and the harness survives every one.
// Each runs under /usr/bin/python3 in the sandbox with small limits, and each ends within its
// wall clock plus one second.
#include <gtest/gtest.h>

#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "trex/oreval/execute.h"
#include "trex/oreval/sandbox.h"
#include "trex/oreval/warm_pool.h"
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
  o.limits.file_bytes = size_t(8) << 20;  // small, so that hitting it is quick on a loaded disk
  o.solve_time_limit_s = 5;
  o.max_solve_requests = 5;
  o.read_bytes = size_t(1) << 20;
  // A machine without a layer runs these anyway; the tests that need the layer skip by name.
  o.allow_weak_sandbox = true;
  return o;
}

// How far past its wall clock a program may end and still count as contained. The programs
// here would otherwise run forever (or 60 s); a loaded CI machine can take seconds to start
// Python and to reap the sandbox, so the bound tells "killed" from "not killed", not a speed.
constexpr double kContainmentSlack = 15;

Execution run(const std::string& code) {
  if (!program_available("/usr/bin/python3")) return {};
  Execution e = execute({CodeKind::kPython, code}, "", small_limits());
  EXPECT_LT(e.seconds, small_limits().limits.wall_s + kContainmentSlack) << "not contained within its wall clock";
  return e;
}

// A program that must run to its end: limits generous enough that a slow or loaded machine
// gives the same verdict (the small limits above are for programs that must be stopped).
ExecOptions to_end_limits() {
  ExecOptions o = small_limits();
  o.limits.wall_s = 120;
  o.limits.cpu_s = 120;
  o.solve_time_limit_s = 120;
  return o;
}

Execution run_to_end(const std::string& code) {
  if (!program_available("/usr/bin/python3")) return {};
  return execute({CodeKind::kPython, code}, "", to_end_limits());
}

#define REQUIRE_PYTHON() \
  if (!program_available("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not installed"

// A layer the kernel does not offer is reported as a skip naming it, never passed silently.
#define REQUIRE_LAYER(name)                                              \
  if (sandbox_isolation().find(name) == std::string::npos)              \
  GTEST_SKIP() << "sandbox layer '" << name << "' unavailable here: " << sandbox_isolation()

TEST(Hostile, WellBehavedProgramSolves) {
  REQUIRE_PYTHON();
  Execution e = run_to_end(
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

// What ordinary completions use gets through the default-deny filter: numpy (OpenBLAS),
// threads, sleeping, clocks, randomness, files in the program's own folder.
TEST(Hostile, OrdinaryLibrariesWork) {
  REQUIRE_PYTHON();
  if (run_process({"/usr/bin/python3", "-c", "import numpy"}).exit_code != 0) GTEST_SKIP() << "numpy not installed";
  Execution e = run_to_end(
      "import json, math, random, itertools, collections, time, threading, os, datetime, statistics\n"
      "import numpy as np\n"
      "a = np.arange(100.0).reshape(10, 10) + np.eye(10) * 100\n"
      "print(round(float(np.linalg.solve(a, np.ones(10))[0]), 6), random.random() < 1, len(os.getcwd()) > 0)\n"
      "t = threading.Thread(target=lambda: time.sleep(0.01))\nt.start()\nt.join()\ntime.sleep(0.01)\n"
      "print(datetime.datetime.now().year > 2000, time.time() > 0, time.perf_counter() > 0)\n"
      "os.mkdir('d')\nopen('d/f.txt', 'w').write('x')\nos.rename('d/f.txt', 'd/g.txt')\nos.remove('d/g.txt')\nos.rmdir('d')\n"
      "print(statistics.mean([1, 2, 3]))\n");
  EXPECT_EQ(e.status, ExecStatus::kNoModel) << e.message;
  EXPECT_EQ(e.output, "0.010732 True True\nTrue True True\n2\n") << e.message;
}

TEST(Hostile, InfiniteLoopTimesOut) {
  REQUIRE_PYTHON();
  Execution e = run("while True:\n    pass\n");
  EXPECT_EQ(e.status, ExecStatus::kTimeout) << e.message;
  EXPECT_LT(e.seconds, small_limits().limits.wall_s + kContainmentSlack);
}

TEST(Hostile, SleepingProgramIsKilledAtTheWallClock) {
  REQUIRE_PYTHON();
  Execution e = run("import time\ntime.sleep(60)\n");
  EXPECT_EQ(e.status, ExecStatus::kTimeout) << e.message;
  EXPECT_LT(e.seconds, small_limits().limits.wall_s + kContainmentSlack);
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
  Execution e = run("blocks = []\nwhile True:\n    blocks.append(bytes(64 << 20))\n");
  EXPECT_EQ(e.status, ExecStatus::kRuntimeError) << e.message;
  EXPECT_NE(e.message.find("MemoryError"), std::string::npos) << e.message;
}

TEST(Hostile, HugeOutputIsCut) {
  REQUIRE_PYTHON();
  Execution e = run("import sys\nline = 'x' * 1000 + '\\n'\nwhile True:\n    sys.stdout.write(line)\n");
  EXPECT_EQ(e.status, ExecStatus::kRuntimeError);
  EXPECT_EQ(e.message, "output limit reached");
  EXPECT_LE(e.output.size(), size_t(64) << 10);
  // A 200 MB file is cut at RLIMIT_FSIZE (8 MiB here): the write fails with EFBIG (Python ignores
  // SIGXFSZ) once the file holds exactly the limit. Run with the generous wall clock so that on a
  // loaded machine the 3 s clock cannot end it first and pass it as a runtime error for the wrong
  // reason; written in 1 MiB chunks, so nothing waits on 200 MB of memory first. The program
  // prints what it saw and re-raises, so the verdict is still the runtime error.
  Execution f = run_to_end(
      "import os\n"
      "chunk = bytes(1 << 20)\n"
      "try:\n"
      "    with open('big', 'wb') as f:\n"
      "        for _ in range(200):\n"
      "            f.write(chunk)\n"
      "except OSError as err:\n"
      "    print(err.errno, os.path.getsize('big'), flush=True)\n"
      "    raise\n");
  EXPECT_EQ(f.status, ExecStatus::kRuntimeError) << f.message;
  EXPECT_EQ(f.output, "27 " + std::to_string(small_limits().limits.file_bytes) + "\n") << f.message;  // EFBIG
  EXPECT_NE(f.message.find("File too large"), std::string::npos) << f.message;
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

// What lets a warm interpreter's programs share one network namespace (as root with seccomp,
// sandbox_child.h): no program can create a socket of any family, so none can put anything in
// the namespace (a port, an abstract Unix socket) that another could see. Both paths.
TEST(Hostile, NoSocketOfAnyFamily) {
  REQUIRE_PYTHON();
  REQUIRE_LAYER("seccomp");
  const std::string code =
      "import socket\n"
      "refused = []\n"
      "for family in (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK, socket.AF_PACKET):\n"
      "    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW):\n"
      "        try:\n"
      "            socket.socket(family, kind).close()\n"
      "            print('created', family, kind)\n"
      "        except PermissionError:\n"
      "            refused.append((family, kind))\n"
      "        except OSError as e:\n"
      "            print('other error', family, kind, e)\n"
      "try:\n"
      "    socket.socketpair()\n"
      "    print('created socketpair')\n"
      "except PermissionError:\n"
      "    refused.append('pair')\n"
      "print('refused', len(refused))\n";
  for (bool cold : {false, true}) {
    ExecOptions o = small_limits();
    o.warm_pool = !cold;
    Execution e = execute({CodeKind::kPython, code}, "", o);
    ASSERT_EQ(e.status, ExecStatus::kNoModel) << e.message << "\n" << e.output;
    EXPECT_EQ(e.output, "refused 16\n") << (cold ? "fresh path" : "warm path");
  }
}

// fd 3, the solve channel, is a socket trex made in the evaluator's network namespace; a socket's
// interface requests read the namespace it was made in. So the filter refuses every socket
// ioctl (type 0x89): SIOCGIFCONF (every interface and address), SIOCGIFADDR and SIOCGIFHWADDR
// (loopback's address and MAC), and one with the type alone (0x40048906, SIOCGSTAMP-like
// encoding), each with a PermissionError, on both paths; a terminal-free ioctl still runs.
TEST(Hostile, NoSocketIoctlOnTheSolveChannel) {
  REQUIRE_PYTHON();
  REQUIRE_LAYER("seccomp");
  const std::string code =
      "import array, fcntl, os, stat, struct\n"
      "print('socket' if stat.S_ISSOCK(os.fstat(3).st_mode) else 'not a socket')\n"
      "buf = array.array('B', bytes(4096))\n"
      "ifconf = struct.pack('iL', len(buf), buf.buffer_info()[0])\n"
      "ifreq = struct.pack('16s24x', b'lo')\n"
      "for request, arg in ((0x8912, ifconf), (0x8915, ifreq), (0x8927, ifreq), (0x40048906, ifreq)):\n"
      "    try:\n"
      "        fcntl.ioctl(3, request, arg)\n"
      "        print(hex(request), 'answered')\n"
      "    except PermissionError:\n"
      "        print(hex(request), 'refused')\n"
      "    except OSError as e:\n"
      "        print(hex(request), 'other error', e)\n"
      "try:\n"
      "    fcntl.ioctl(3, 0x541B, struct.pack('i', 0))\n"  // FIONREAD: not a socket request
      "    print('fionread answered')\n"
      "except OSError as e:\n"
      "    print('fionread', e)\n";
  for (bool cold : {false, true}) {
    ExecOptions o = small_limits();
    o.warm_pool = !cold;
    Execution e = execute({CodeKind::kPython, code}, "", o);
    ASSERT_EQ(e.status, ExecStatus::kNoModel) << e.message << "\n" << e.output;
    EXPECT_EQ(e.output,
              "socket\n0x8912 refused\n0x8915 refused\n0x8927 refused\n0x40048906 refused\nfionread answered\n")
        << (cold ? "fresh path" : "warm path");
  }
}

// Each program is in a network namespace other than the evaluator's: on the fresh path a fresh
// one per child, made before it executes the interpreter; on the warm path the one its
// interpreter made for its children (as root with seccomp), else one per child, made by the
// child forked ahead of its request while it waits (sandbox_prepare).
TEST(Hostile, EveryProgramIsOutsideTheEvaluatorsNetworkNamespace) {
  REQUIRE_PYTHON();
  REQUIRE_LAYER("netns");
  struct stat own {};
  ASSERT_EQ(::stat("/proc/self/ns/net", &own), 0);
  for (bool cold : {false, true})
    for (int i = 0; i < 3; ++i) {
      // Each program must run to its end (a warm pool's first start at load 16 passed 3 s).
      ExecOptions o = to_end_limits();
      o.warm_pool = !cold;
      Execution e = execute({CodeKind::kPython, "import os\nprint(os.stat('/proc/self/ns/net').st_ino)\n"}, "", o);
      ASSERT_EQ(e.status, ExecStatus::kNoModel) << e.message << "\n" << e.output;
      EXPECT_NE(e.output, std::to_string(own.st_ino) + "\n") << (cold ? "fresh path" : "warm path") << ", program " << i;
      EXPECT_FALSE(e.output.empty());
    }
}

TEST(Hostile, SyntaxGarbageAndOddUnicode) {
  REQUIRE_PYTHON();
  Execution e = run("def (:\n  ]]] ```\n");
  EXPECT_EQ(e.status, ExecStatus::kSyntaxError) << e.message;
  Execution nul = run(std::string("x = 1\0\n", 7));
  EXPECT_EQ(nul.status, ExecStatus::kSyntaxError) << nul.message;
  Execution u = run_to_end(
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


// The files the evaluator reads back are refused when the program leaves anything but a
// plain file there; the report names the file and carries none of its bytes.
TEST(Hostile, LeftFilesAreNotFollowed) {
  REQUIRE_PYTHON();
  // Links and FIFOs: seccomp refuses to make them (the evaluator's own refusal of them is
  // covered by left_file_test.cc).
  for (const char* make : {"os.symlink('/etc/shadow', '__trex_final.json')", "os.link('/etc/shadow', 'model.lp')",
                           "os.mkfifo('__trex_final.json')", "os.mknod('model.lp', 0o20666, os.makedev(1, 5))"}) {
    Execution e = run(std::string("import os\n") + make + "\nos._exit(0)\n");
    EXPECT_EQ(e.status, ExecStatus::kRuntimeError) << make << ": " << e.message;
    EXPECT_FALSE(e.model) << make;
  }
  Execution dir = run("import os\nos.mkdir('__trex_final.json')\nos._exit(0)\n");
  EXPECT_EQ(dir.status, ExecStatus::kRuntimeError) << dir.message;
  EXPECT_EQ(dir.message, "unreadable model: __trex_final.json: is a directory; not read");
  Execution lp_dir = run("import os\nos.mkdir('model.lp')\n");
  EXPECT_EQ(lp_dir.status, ExecStatus::kRuntimeError) << lp_dir.message;
  EXPECT_EQ(lp_dir.message, "unreadable model: model.lp: is a directory; not read");
  Execution huge = run("with open('model.lp', 'w') as f:\n    f.write('x' * (2 << 20))\n");
  EXPECT_EQ(huge.status, ExecStatus::kRuntimeError) << huge.message;
  EXPECT_EQ(huge.message, "unreadable model: model.lp: is larger than 1048576 bytes; not read");
  Execution solve_dir = run(
      "import os\nfrom gurobipy import Model\nm = Model()\nm.addVar()\nos.mkdir('__trex_solve.json')\n"
      "import trex_modeling.solve as s\ns._write_record = lambda path, record: None\nm.optimize()\n");
  EXPECT_EQ(solve_dir.status, ExecStatus::kRuntimeError) << solve_dir.message;
  EXPECT_NE(solve_dir.message.find("__trex_solve.json: is a directory; not read"), std::string::npos) << solve_dir.message;
}

// Bench4Opt's reference programs write model.lp; a program that builds no gurobipy Model but
// writes model.lp is scored on that file, as docs/eval.md says.
TEST(Hostile, ModelLpFallback) {
  REQUIRE_PYTHON();
  Execution e = run_to_end("open('model.lp', 'w').write('Maximize\\n obj: 3 x + 2 y\\nSubject To\\n c: x + y <= 4\\nEnd\\n')\n");
  ASSERT_EQ(e.status, ExecStatus::kOk) << e.message;
  EXPECT_EQ(e.message, "model from model.lp");
  ASSERT_TRUE(e.model);
  EXPECT_EQ(e.model->num_vars(), 2);
  Execution none = run("print('no model at all')\n");
  EXPECT_EQ(none.status, ExecStatus::kNoModel) << none.message;
}

TEST(Hostile, X32AndPidfdSyscallsAreRefused) {
  REQUIRE_PYTHON();
  REQUIRE_LAYER("seccomp");
  // getpid through the x32 ABI (0x40000000 | 39): the process is killed.
  Execution x32 = run("import ctypes\nlibc = ctypes.CDLL(None)\nprint(libc.syscall(0x40000000 + 39))\n");
  EXPECT_EQ(x32.status, ExecStatus::kRuntimeError) << x32.message;
  EXPECT_NE(x32.message.find("killed by signal"), std::string::npos) << x32.message;
  EXPECT_EQ(x32.output, "");
  // pidfd_open on the evaluator, pidfd_send_signal, pidfd_getfd, rt_sigqueueinfo and
  // rt_tgsigqueueinfo with SIGKILL at it: each fails with EPERM, and the evaluator (this test) lives.
  Execution pidfd = run(
      "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nppid = os.getppid()\n"
      "info = ctypes.create_string_buffer(128)\nout = []\n"
      "for nr, args in ((434, (ppid, 0)), (424, (3, 9, None, 0)), (438, (3, 3, 0)), (129, (ppid, 9, info)),\n"
      "                 (297, (ppid, ppid, 9, info))):\n"
      "    r = libc.syscall(nr, *args)\n"
      "    out.append('%d:%d:%d' % (nr, r, ctypes.get_errno()))\n"
      "print(' '.join(out))\n"
      "os.pidfd_open(ppid)\n");
  EXPECT_EQ(pidfd.status, ExecStatus::kRuntimeError) << pidfd.message;
  EXPECT_EQ(pidfd.output, "434:-1:1 424:-1:1 438:-1:1 129:-1:1 297:-1:1\n");
  EXPECT_NE(pidfd.message.find("PermissionError"), std::string::npos) << pidfd.message;
}

TEST(Hostile, SignalsReachOnlyTheProgramsOwnGroup) {
  REQUIRE_PYTHON();
  REQUIRE_LAYER("seccomp");
  for (const char* target : {"os.getppid()", "-os.getpgid(os.getppid())", "-1"}) {
    Execution e = run(std::string("import os, signal\nos.kill(") + target + ", signal.SIGKILL)\n");
    EXPECT_EQ(e.status, ExecStatus::kRuntimeError) << target << ": " << e.message;
    EXPECT_NE(e.message.find("PermissionError"), std::string::npos) << target << ": " << e.message;
  }
  // Its own session and group, no terminal, and signals to itself still work.
  Execution own = run(
      "import os, signal\nprint(os.getsid(0) == os.getpid(), os.getpgrp() == os.getpid())\n"
      "signal.signal(signal.SIGUSR1, lambda *a: print('got it'))\nos.kill(os.getpid(), signal.SIGUSR1)\n"
      "os.kill(0, signal.SIGUSR1)\n"
      "try:\n    open('/dev/tty')\nexcept OSError as e:\n    print('no tty')\n");
  EXPECT_EQ(own.output, "True True\ngot it\ngot it\nno tty\n") << own.message;
}

TEST(Hostile, TheEvaluatorsProcFilesAreUnreadable) {
  REQUIRE_PYTHON();
  REQUIRE_LAYER("landlock");
  for (const char* file : {"environ", "cmdline", "status", "maps", "fd/0"}) {
    Execution e = run(std::string("import os\nprint(open('/proc/%d/") + file + "' % os.getppid(), 'rb').read()[:64])\n");
    EXPECT_EQ(e.status, ExecStatus::kRuntimeError) << file << ": " << e.message;
    EXPECT_NE(e.message.find("PermissionError"), std::string::npos) << file << ": " << e.message;
    EXPECT_EQ(e.output, "") << file;
  }
}

// A /proc file's text, or "" when its process exited meanwhile: libstdc++'s filebuf throws
// std::ios_base::failure when the read itself fails (ESRCH after the exit), even with the
// stream's exceptions off, and the watch thread below must not die of a child that ended.
std::string proc_text(const std::filesystem::path& file) {
  try {
    std::ifstream in(file);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure&) {
    return "";
  }
}

// The children of this process's warm interpreters (python/trex_eval_zygote.py), by pid.
std::set<int> children_of_warm_interpreters() {
  std::set<int> zygotes, found;
  std::vector<std::pair<int, int>> parent_of;  // (pid, ppid)
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string text = proc_text(e.path() / "stat");
    size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 1));
    std::string state;
    int ppid = 0;
    rest >> state >> ppid;
    parent_of.emplace_back(std::stoi(name), ppid);
    if (ppid != getpid()) continue;
    std::string args = proc_text(e.path() / "cmdline");
    if (args.find("trex_eval_zygote.py") != std::string::npos) zygotes.insert(std::stoi(name));
  }
  for (auto [pid, ppid] : parent_of)
    if (zygotes.count(ppid)) found.insert(pid);
  return found;
}

// Forking early (one worker with a CPU beside it: warm_fork_early), the next program's child is
// forked while the current program runs and waits beside it. The program cannot reach it: not
// by the uid (in a user namespace it is the same host uid), but by seccomp (signals only to its
// own group) and Landlock (no /proc). The program tries `kill` and /proc/PID/mem on the 256 pids
// after its own; the test sees from outside which children the interpreter had meanwhile, and
// requires that the next program ran in one of those pids: the interpreter did fork early (so
// this also checks that its main() passes FORK_EARLY on to the library's loop).
TEST(Hostile, CannotReachTheEarlyForkedChild) {
  REQUIRE_PYTHON();
  REQUIRE_LAYER("seccomp");
  REQUIRE_LAYER("landlock");
  if (!missing_sandbox_layers().empty()) GTEST_SKIP() << "a layer is missing: the warm pool is not used";
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  if (!warm_fork_early(1, CPU_COUNT(&set))) GTEST_SKIP() << "one CPU here: an interpreter does not fork early";
  // An interpreter reads the workers' setting when it starts: the idle ones that earlier tests
  // of this process started without it are told to exit, so that this test's lease starts one
  // that forks early, whatever ran before; after it, the same again with the setting cleared.
  warm_pool_set_workers(1);
  warm_pool_release_idle();
  struct RestoreWorkers {
    ~RestoreWorkers() {
      warm_pool_set_workers(0);
      warm_pool_release_idle();
    }
  } restore;
  int started = warm_interpreters_started();
  // The pids the first program tries: the 256 after its own, wrapping past pid_max to 300 as
  // the kernel does (RESERVED_PIDS), so a wraparound or a busy machine (other ctest jobs
  // taking pids between the two forks) does not leave the next child out of the range.
  long pid_max = 0;
  std::ifstream("/proc/sys/kernel/pid_max") >> pid_max;
  ASSERT_GT(pid_max, 300) << "/proc/sys/kernel/pid_max unreadable";
  constexpr int kTried = 256;
  auto tried = [&](long me) {
    std::set<long> out;
    for (long k = 1; k <= kTried; ++k) out.insert(me + k < pid_max ? me + k : 300 + (me + k - pid_max));
    return out;
  };
  std::atomic<bool> done{false};
  std::mutex m;
  std::set<int> seen;
  std::thread watch([&] {
    while (!done) {
      std::set<int> now = children_of_warm_interpreters();
      {
        std::lock_guard<std::mutex> lock(m);
        seen.insert(now.begin(), now.end());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  // It sleeps first: the next child is forked once this program's pid is sent, and the watch
  // must see it. A pid that exists or not, kill must give EPERM (seccomp decides before the
  // kernel looks); /proc/PID/mem EACCES (Landlock), or ENOENT where no such pid exists. The
  // signal sent is SIGWINCH, ignored by default: were the seccomp rule to regress, the test
  // fails without killing whatever else runs at those pids (ctest's other jobs).
  Execution first = run_to_end(
      "import os, signal, time\nme = os.getpid()\ntime.sleep(1.5)\nodd, none = [], []\n"
      "pid_max = " + std::to_string(pid_max) + "\n"
      "for p in (me + k if me + k < pid_max else 300 + me + k - pid_max for k in range(1, " +
      std::to_string(kTried + 1) + ")):\n"
      "    for what, act in (('probe', lambda: os.kill(p, 0)), ('kill', lambda: os.kill(p, signal.SIGWINCH)),\n"
      "                      ('mem', lambda: open('/proc/%d/mem' % p, 'r+b'))):\n"
      "        try:\n            act()\n            odd.append((what, p, 'reached'))\n"
      "        except PermissionError:\n            pass\n"
      "        except FileNotFoundError:\n"
      "            (none if what == 'mem' else odd).append(p if what == 'mem' else (what, p, 'ENOENT'))\n"
      "        except OSError as e:\n            odd.append((what, p, type(e).__name__))\n"
      "print(me, odd)\nprint(*none)\n");
  done = true;
  watch.join();
  EXPECT_EQ(warm_interpreters_started(), started + 1) << "the first program did not get an interpreter of its own";
  ASSERT_EQ(first.status, ExecStatus::kNoModel) << first.message << "\n" << first.output;
  int me = 0;
  std::string odd;
  std::set<int> no_such_pid;  // /proc/PID/mem gave ENOENT: no process had that pid then
  {
    std::istringstream lines(first.output);
    lines >> me;
    std::getline(lines, odd);
    for (int p; lines >> p;) no_such_pid.insert(p);
  }
  EXPECT_EQ(odd, " []") << first.output;
  // The next program runs normally, in the child that waited beside the first.
  Execution second = run_to_end("import os\nprint(os.getpid())\n");
  ASSERT_EQ(second.status, ExecStatus::kNoModel) << second.message << "\n" << second.output;
  int next = std::stoi(second.output);
  std::lock_guard<std::mutex> lock(m);
  EXPECT_TRUE(seen.count(me)) << "the watch did not see the first program";
  EXPECT_TRUE(seen.count(next)) << "the next program's child was not forked while the first ran: " << next;
  EXPECT_TRUE(tried(me).count(next)) << "the first program did not try the next child's pid " << next
                                     << " (its own " << me << ", pid_max " << pid_max << ")";
  // Its /proc/PID/mem was refused (EACCES), not missing: the child was there when tried.
  EXPECT_FALSE(no_such_pid.count(next)) << first.output;
}

// Nothing one program does is seen by the next one the same evaluator runs: not files (its
// folder, its copy of the modelling module, /tmp, /dev/shm, the module's source folder), not
// imports or monkeypatches, not the environment. This holds today by construction (a fresh
// interpreter in a fresh folder per program); a warm worker pool (issue 19) must keep it, and
// this test is its guard. The first program checks that each of its changes took effect where
// it was allowed to make one, so the second program's clean view is not a vacuous pass; its
// module copy is the evaluator's (read-only to it), its folder its own.
TEST(Hostile, NothingCarriesOverToTheNextProgram) {
  REQUIRE_PYTHON();
  REQUIRE_LAYER("landlock");
  const std::string tag = "trex_leak_" + std::to_string(getpid());
  const std::string source_dir = std::string(TREX_SOURCE_DIR) + "/python";
  Execution first = run_to_end(
      "import builtins, os, sys\nimport gurobipy\n"
      "def attempt(what, action):\n"
      "    try:\n        action()\n        print(what, 'written')\n"
      "    except OSError:\n        print(what, 'refused')\n"
      "def write(path):\n    return lambda: open(path, 'w').write('leak')\n"
      "attempt('tmp', write('/tmp/" + tag + "'))\n"
      "attempt('shm', write('/dev/shm/" + tag + "'))\n"
      "attempt('source', write('" + source_dir + "/" + tag + ".py'))\n"
      "attempt('cwd', write('" + tag + ".txt'))\n"
      "mod = os.path.dirname(gurobipy.__file__)\n"
      "attempt('module copy', lambda: open(os.path.join(mod, '__init__.py'), 'a').write('\\nLEAKED = 1\\n'))\n"
      "gurobipy.Model = None\nbuiltins.print_leak = True\nsys.modules['json'] = None\n"
      "os.environ['TREX_LEAK'] = '1'\nos.putenv('TREX_LEAK2', '1')\n"
      "print('patched here', gurobipy.Model is None, builtins.print_leak, os.environ['TREX_LEAK'])\n");
  ASSERT_EQ(first.status, ExecStatus::kNoModel) << first.message << "\n" << first.output;
  // The module copy is root's and read-only to user nobody; in a user namespace (trex not root)
  // the program may change its own copy, which is in its own folder: either way not the next one's.
  std::string seen = first.output;
  for (const char* either : {"module copy refused\n", "module copy written\n"})
    if (size_t at = seen.find(either); at != std::string::npos) seen.replace(at, std::strlen(either), "module copy tried\n");
  EXPECT_EQ(seen,
            "tmp refused\nshm refused\nsource refused\n"
            "cwd written\nmodule copy tried\npatched here True True 1\n");
  Execution second = run_to_end(
      "import builtins, glob, json, os, sys\nimport gurobipy\n"
      "print('leaked module', hasattr(gurobipy, 'LEAKED'), gurobipy.Model is None)\n"
      "print('leaked builtins', hasattr(builtins, 'print_leak'))\n"
      "print('leaked env', sorted(k for k in os.environ if 'LEAK' in k))\n"
      "print('leaked files', glob.glob('/tmp/" + tag + "*') + glob.glob('/dev/shm/" + tag + "*') + "
      "glob.glob('*" + tag + "*') + glob.glob('" + source_dir + "/" + tag + "*'))\n");
  ASSERT_EQ(second.status, ExecStatus::kNoModel) << second.message << "\n" << second.output;
  EXPECT_EQ(second.output,
            "leaked module False False\nleaked builtins False\nleaked env []\nleaked files []\n");
  for (const std::string& left : {"/tmp/" + tag, "/dev/shm/" + tag, source_dir + "/" + tag + ".py"})
    EXPECT_FALSE(std::filesystem::exists(left)) << left;
}

// A warm child's model is the one its folder holds once the whole child has exited, as it is
// for a fresh interpreter's: a daemon thread may rewrite the record or model.lp after the main
// thread's last flush, and the evaluator may look at the files before the exit (execute.cc
// reads them ahead while the child's memory is torn down) but must score what is there at the
// exit. The program holds its own end open: os._exit (which the warm child ends with, in
// trex_eval_zygote.py's finish) closes the output first (the evaluator then reads ahead) and
// waits until the thread has rewritten the file, so the rewrite lands after the output ended
// and after everything else the child does before its exit, on every run; the thread waits 1.5 s
// first (room for a loaded machine), so the evaluator's early read has seen the old bytes (an evaluator that trusted it
// would score model a): the early work must not be the one used.
TEST(Hostile, ModelRewrittenAtTheExitIsTheOneScored) {
  REQUIRE_PYTHON();
  if (!missing_sandbox_layers().empty()) GTEST_SKIP() << "a layer is missing: the warm pool is not used";
  const std::string hold_exit =
      "import os, threading, time\n"
      "start, done = threading.Event(), threading.Event()\n"
      "def rewrite():\n"
      "    start.wait()\n"
      "    time.sleep(1.5)\n"
      "    with open(NAME, 'w') as f:\n"
      "        f.write(TEXT)\n"
      "    done.set()\n"
      "threading.Thread(target=rewrite, daemon=True).start()\n"
      "real_exit = os._exit\n"
      "def held_exit(status):\n"
      "    os.close(1)\n"
      "    os.close(2)\n"
      "    start.set()\n"
      "    done.wait(20)\n"
      "    real_exit(status)\n"
      "os._exit = held_exit\n";
  // The record: model `a` (one variable) is the runner's; the thread writes model b's (three).
  Execution record = run_to_end(
      "import json\nfrom gurobipy import Model\n"
      "b = Model('b')\nys = [b.addVar(name='y%d' % i) for i in range(3)]\nb.addConstr(ys[0] + ys[1] + ys[2] <= 2, 'd')\n"
      "data = b._to_json()\ndata['from'] = 'rewritten at the exit'\n"
      "NAME, TEXT = '__trex_final.json', json.dumps(data)\n" +
      hold_exit +
      "model = Model('a')\nx = model.addVar(name='x')\nmodel.addConstr(x <= 1, 'c')\n");
  ASSERT_EQ(record.status, ExecStatus::kOk) << record.message;
  EXPECT_EQ(record.message, "model from rewritten at the exit");
  ASSERT_TRUE(record.model);
  EXPECT_EQ(record.model->num_vars(), 3);
  EXPECT_FALSE(record.model_read_ahead);
  // model.lp, with no gurobipy model (the record is not written): the thread's file is read.
  Execution lp = run_to_end(
      "NAME, TEXT = 'model.lp', 'Maximize\\n obj: x + y + z\\nSubject To\\n c: x + y + z <= 4\\nEnd\\n'\n" + hold_exit +
      "open('model.lp', 'w').write('Maximize\\n obj: 3 x\\nSubject To\\n c: x <= 4\\nEnd\\n')\n");
  ASSERT_EQ(lp.status, ExecStatus::kOk) << lp.message;
  EXPECT_EQ(lp.message, "model from model.lp");
  ASSERT_TRUE(lp.model);
  EXPECT_EQ(lp.model->num_vars(), 3);
  EXPECT_FALSE(lp.model_read_ahead);
}

// The other side of the test above: an ordinary warm program's model (its record, or the
// model.lp it wrote) is the one read ahead before the status and kept, so the speed path
// engages (nothing else would say it had stopped) and the test above checks a read-ahead that
// happened. Whether the child closes its output early only moves when that read happens.
TEST(Hostile, AnOrdinaryWarmProgramsModelIsTheOneReadAhead) {
  REQUIRE_PYTHON();
  if (!missing_sandbox_layers().empty()) GTEST_SKIP() << "a layer is missing: the warm pool is not used";
  Execution record = run_to_end("from gurobipy import Model\nm = Model('a')\nx = m.addVar(name='x')\nm.addConstr(x <= 1, 'c')\n");
  ASSERT_EQ(record.status, ExecStatus::kOk) << record.message;
  EXPECT_TRUE(record.model_read_ahead);
  Execution lp = run_to_end("open('model.lp', 'w').write('Maximize\\n obj: 3 x\\nSubject To\\n c: x <= 4\\nEnd\\n')\n");
  ASSERT_EQ(lp.status, ExecStatus::kOk) << lp.message;
  EXPECT_EQ(lp.message, "model from model.lp");
  EXPECT_TRUE(lp.model_read_ahead);
}

TEST(Hostile, NoInheritedDescriptors) {
  REQUIRE_PYTHON();
  Execution e = run(
      "import os\nopen_fds = []\nfor fd in range(4, 4096):\n    try:\n        os.fstat(fd)\n"
      "        open_fds.append(fd)\n    except OSError:\n        pass\nprint(open_fds)\n");
  EXPECT_EQ(e.output, "[]\n") << e.message;
}

TEST(Hostile, SolveChannelFloodIsStopped) {
  REQUIRE_PYTHON();
  Execution e = run(
      "from gurobipy import Model\nm = Model()\nx = m.addVar(ub=1)\nm.setObjective(x, -1)\n"
      "while True:\n    try:\n        m.optimize()\n    except Exception:\n        pass\n");
  EXPECT_EQ(e.status, ExecStatus::kRuntimeError) << e.message;
  EXPECT_EQ(e.message, "more than 5 solve requests");
  EXPECT_EQ(e.solve_requests, 6);
  // Raw lines on the channel count the same.
  Execution raw = run("import os\nwhile True:\n    os.write(3, b'junk\\n')\n    os.read(3, 4096)\n");
  EXPECT_EQ(raw.message, "more than 5 solve requests");
}

TEST(Hostile, HostileModelsOnTheSolveChannel) {
  REQUIRE_PYTHON();
  // NaN cannot be written; 1e308 is refused by the solver; both end as runtime errors.
  Execution nan = run("from gurobipy import Model\nm = Model()\nx = m.addVar()\nm.setObjective(float('nan') * x)\nm.optimize()\n");
  EXPECT_EQ(nan.status, ExecStatus::kRuntimeError) << nan.message;
  Execution huge = run("from gurobipy import Model\nm = Model()\nx = m.addVar(ub=1)\nm.addConstr(1e308 * x <= 1e308)\n"
                       "m.setObjective(1e308 * x, -1)\nm.optimize()\n");
  EXPECT_EQ(huge.status, ExecStatus::kRuntimeError) << huge.message;
  // A million variables of one name, written straight to the channel's file: parsed and
  // solved in the helper, whatever it costs, within the program's wall clock.
  Execution million = run(
      "import os\nn = 1000000\nwith open('__trex_solve.json', 'w') as f:\n"
      "    f.write('{\"sense\":\"min\",\"vars\":[' + ','.join(['[\"\",0,1,\"C\",1]'] * n) + '],\"constrs\":[]}')\n"
      "os.write(3, b'solve __trex_solve.json 1e9\\n')\nprint(os.read(3, 200)[:40])\nraise SystemExit(3)\n");
  EXPECT_NE(million.status, ExecStatus::kOk) << million.message;
  // The same with a read cap that admits it: the helper parses and solves it, or the shared
  // deadline ends it; either way the program ends at its wall clock (kContainmentSlack).
  ExecOptions roomy = small_limits();
  roomy.read_bytes = size_t(32) << 20;
  roomy.limits.file_bytes = size_t(32) << 20;
  std::string program =
      "import os, sys\nn = 1000000\nwith open('__trex_solve.json', 'w') as f:\n"
      "    f.write('{\"sense\":\"min\",\"vars\":[' + ','.join(['[\"\",0,1,\"C\",1]'] * n) + '],\"constrs\":[]}')\n"
      "os.write(3, b'solve __trex_solve.json 1e9\\n')\nreply = b''\nwhile not reply.endswith(b'\\n'):\n"
      "    reply += os.read(3, 1 << 20)\nprint(reply[:24])\nsys.exit(3)\n";
  Execution parsed = execute({CodeKind::kPython, program}, "", roomy);
  EXPECT_NE(parsed.status, ExecStatus::kOk) << parsed.message;
  EXPECT_LT(parsed.seconds, roomy.limits.wall_s + kContainmentSlack) << parsed.message;
}

}  // namespace
}  // namespace trex::oreval
