// enter_sandbox, the layers both kinds of child put on themselves (a fork of trex that executes
// the interpreter, and a fork of the warm interpreter that runs the program in place): after it
// the child holds no capability, effective or permitted. The warm child never calls execve,
// so nothing but enter_sandbox may drop what unshare(CLONE_NEWUSER) or root gave it. The same
// holds, with a session and a network namespace of the child's own, when the warm child made
// those ahead of its request (sandbox_prepare, then enter_sandbox with plan.prepared).
#include "trex/oreval/sandbox_child.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "trex/oreval/warm_pool.h"

namespace trex::oreval {
namespace {

namespace fs = std::filesystem;

// In a forked child: sandbox_prepare when `prepared`, then enter_sandbox with `plan`, then
// exit 0 when the child holds no capability, a session of its own and a network namespace
// other than the evaluator's (`evaluator_net`).
[[noreturn]] void enter_then_check(ChildPlan plan, bool prepared, ino_t evaluator_net) {
  plan.prepared = prepared;
  if (prepared) {
    const char* what = "";
    if (sandbox_prepare(plan.probe, &what) != 0) _exit(126);
  }
  enter_sandbox(plan, nullptr, 0);  // without the seccomp filter, so that capget may run
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, caps) != 0) _exit(3);
  for (const auto& c : caps)
    if (c.effective != 0 || c.permitted != 0) _exit(1);
  struct stat own_net {};
  if (::stat("/proc/self/ns/net", &own_net) != 0 || own_net.st_ino == evaluator_net) _exit(2);
  if (::getsid(0) != ::getpid()) _exit(4);
  _exit(0);
}

// A sandbox folder the unprivileged identity may enter, and the plan of a child that writes
// only to /dev/null.
struct Folder {
  fs::path dir = fs::temp_directory_path() / ("trex_sandbox_child_" + std::to_string(::getpid()));
  std::string workdir;
  int devnull = -1;
  Folder() {
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::all);
    workdir = dir.string();
    devnull = ::open("/dev/null", O_WRONLY);
  }
  ~Folder() {
    if (devnull >= 0) ::close(devnull);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  ChildPlan plan() const {
    ChildPlan p;
    p.workdir = workdir.c_str();
    p.probe = sandbox_probe();
    p.out_fd = p.err_fd = p.channel_fd = devnull;
    return p;
  }
};

// Forks a child that enters the sandbox (after sandbox_prepare when `prepared`) and then checks
// what it holds (enter_then_check); its exit code.
int enter_and_check(bool prepared) {
  Folder folder;
  if (folder.devnull < 0) return -1;
  struct stat evaluator_net {};
  if (::stat("/proc/self/ns/net", &evaluator_net) != 0) return -1;
  pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) enter_then_check(folder.plan(), prepared, evaluator_net.st_ino);
  int status = 0;
  pid_t reaped = ::waitpid(pid, &status, 0);
  if (reaped != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
}

const char* why(int code) {
  switch (code) {
    case 0: return "ok";
    case 1: return "a capability is left";
    case 2: return "the evaluator's network namespace";
    case 3: return "capget failed";
    case 4: return "no session of its own";
    case 10: return "shared a namespace without seccomp";
    case 11: return "the interpreter did not share its namespace";
    case 12: return "the shared namespace is the evaluator's";
    case 13: return "fork failed";
    case 14: return "the child left the interpreter's namespace";
    case 15: return "the child did not exit";
    case 126: return "a layer failed";
  }
  return "fork, wait or a signal";
}

TEST(SandboxChild, LeavesNoCapability) {
  if (!missing_layers(sandbox_probe()).empty())
    GTEST_SKIP() << "a sandbox layer is missing (" << missing_layers(sandbox_probe()).front() << ")";
  int code = enter_and_check(false);
  EXPECT_EQ(code, 0) << why(code);
}

TEST(SandboxChild, APreparedChildEndsTheSame) {
  if (!missing_layers(sandbox_probe()).empty())
    GTEST_SKIP() << "a sandbox layer is missing (" << missing_layers(sandbox_probe()).front() << ")";
  int code = enter_and_check(true);
  EXPECT_EQ(code, 0) << why(code);
}

// A warm interpreter that shares its network namespace with its children
// (sandbox_share_network_namespace, as root with seccomp): it leaves the evaluator's namespace
// itself, and its child, prepared or not, stays in the interpreter's new one while every other
// layer is as before (no capability, a session of its own). A probe without seccomp shares
// nothing. The interpreter is a forked process here, so the test's own namespace is untouched.
TEST(SandboxChild, ASharedNetworkNamespaceIsTheInterpretersOwn) {
  if (!missing_layers(sandbox_probe()).empty())
    GTEST_SKIP() << "a sandbox layer is missing (" << missing_layers(sandbox_probe()).front() << ")";
  if (!sandbox_probe().root || !sandbox_probe().netns) GTEST_SKIP() << "not root: each child makes its own namespaces";
  Folder folder;
  ASSERT_GE(folder.devnull, 0);
  struct stat evaluator_net {};
  ASSERT_EQ(::stat("/proc/self/ns/net", &evaluator_net), 0);
  pid_t interp = ::fork();
  ASSERT_GE(interp, 0);
  if (interp == 0) {
    SandboxProbe no_seccomp = sandbox_probe();
    no_seccomp.seccomp = false;
    if (sandbox_share_network_namespace(no_seccomp) != 0 || sandbox_network_namespace_shared()) _exit(10);
    if (sandbox_share_network_namespace(sandbox_probe()) != 1 || !sandbox_network_namespace_shared()) _exit(11);
    struct stat shared {};
    if (::stat("/proc/self/ns/net", &shared) != 0 || shared.st_ino == evaluator_net.st_ino) _exit(12);
    for (bool prepared : {true, false}) {
      pid_t child = ::fork();
      if (child < 0) _exit(13);
      if (child == 0) {
        ChildPlan plan = folder.plan();
        plan.prepared = prepared;
        if (prepared) {
          const char* what = "";
          if (sandbox_prepare(plan.probe, &what) != 0) _exit(126);
        }
        enter_sandbox(plan, nullptr, 0);
        struct stat own {};
        if (::stat("/proc/self/ns/net", &own) != 0 || own.st_ino != shared.st_ino) _exit(14);
        __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = {};
        if (syscall(SYS_capget, &header, caps) != 0) _exit(3);
        for (const auto& c : caps)
          if (c.effective != 0 || c.permitted != 0) _exit(1);
        if (::getsid(0) != ::getpid()) _exit(4);
        _exit(0);
      }
      int status = 0;
      if (::waitpid(child, &status, 0) != child || !WIFEXITED(status)) _exit(15);
      if (WEXITSTATUS(status) != 0) _exit(WEXITSTATUS(status));
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(interp, &status, 0), interp);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << why(WEXITSTATUS(status));
}

// The warm interpreter's probe (trex_sandbox_probe_in_shared_netns, ecc29c9): as root with
// seccomp its own unshare(CLONE_NEWNET) answers the network-namespace question. Only a move that
// happened may count: where unshare is refused (a seccomp filter answering EPERM here, as a
// container without the capability does), it reports no shared namespace and an isolation
// without "netns", which differs from the evaluator's, so the pool refuses that interpreter
// (WarmLease: its probe must equal this process's). The library is dlopen'ed in a forked child,
// so its probe's statics start fresh and the test's own namespace is untouched.
[[noreturn]] void probe_in_shared_netns_then_check(bool refuse_unshare, ino_t evaluator_net) {
  if (refuse_unshare) {
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog{uint16_t(sizeof filter / sizeof filter[0]), filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) _exit(20);
  }
  void* lib = dlopen(sandbox_enter_library().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) _exit(21);
  using Probe = int (*)(char*, int, int*);
  auto probe = reinterpret_cast<Probe>(dlsym(lib, "trex_sandbox_probe_in_shared_netns"));
  if (!probe) _exit(22);
  char isolation[256] = {};
  int shared = -1;
  probe(isolation, sizeof isolation, &shared);
  const bool says_netns = std::string(isolation).find("netns") != std::string::npos;
  struct stat own {};
  if (::stat("/proc/self/ns/net", &own) != 0) _exit(23);
  const bool moved = own.st_ino != evaluator_net;
  if (refuse_unshare) _exit(shared == 0 && !says_netns && !moved ? 0 : 24);
  _exit(shared == 1 && says_netns && moved ? 0 : 25);
}

TEST(SandboxChild, TheInterpretersNetnsProbeCountsOnlyAMoveThatHappened) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the filter that refuses unshare is written for x86-64";
#endif
  if (!missing_layers(sandbox_probe()).empty())
    GTEST_SKIP() << "a sandbox layer is missing (" << missing_layers(sandbox_probe()).front() << ")";
  if (!sandbox_probe().root || !sandbox_probe().netns) GTEST_SKIP() << "not root: each child makes its own namespaces";
  struct stat evaluator_net {};
  ASSERT_EQ(::stat("/proc/self/ns/net", &evaluator_net), 0);
  for (bool refuse : {false, true}) {
    pid_t interp = ::fork();
    ASSERT_GE(interp, 0);
    if (interp == 0) probe_in_shared_netns_then_check(refuse, evaluator_net.st_ino);
    int status = 0;
    ASSERT_EQ(::waitpid(interp, &status, 0), interp);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << (refuse ? "unshare refused" : "unshare allowed")
                                      << ": exit " << WEXITSTATUS(status)
                                      << " (24/25: shared, isolation or namespace disagree with the move)";
  }
}

}  // namespace
}  // namespace trex::oreval
