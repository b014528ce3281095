// enter_sandbox, the layers both kinds of child put on themselves (a fork of trex that executes
// the interpreter, and a fork of the warm interpreter that runs the program in place): after it
// the child holds no capability, effective or permitted. The warm child never calls execve,
// so nothing but enter_sandbox may drop what unshare(CLONE_NEWUSER) or root gave it. The same
// holds, with a session and a network namespace of the child's own, when the warm child made
// those ahead of its request (sandbox_prepare, then enter_sandbox with plan.prepared).
#include "trex/oreval/sandbox_child.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace trex::oreval {
namespace {

namespace fs = std::filesystem;

// Forks a child that enters the sandbox (after sandbox_prepare when `prepared`) and then checks
// what it holds: exit 0 when it has no capability, a session of its own and a network
// namespace other than the evaluator's.
int enter_and_check(bool prepared) {
  fs::path dir = fs::temp_directory_path() / ("trex_sandbox_child_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all);  // the unprivileged identity may enter it
  std::string workdir = dir.string();
  ChildPlan plan;
  plan.workdir = workdir.c_str();
  plan.probe = sandbox_probe();
  plan.prepared = prepared;
  int devnull = ::open("/dev/null", O_WRONLY);
  if (devnull < 0) return -1;
  plan.out_fd = plan.err_fd = plan.channel_fd = devnull;
  struct stat evaluator_net {};
  if (::stat("/proc/self/ns/net", &evaluator_net) != 0) return -1;
  pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
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
    if (::stat("/proc/self/ns/net", &own_net) != 0 || own_net.st_ino == evaluator_net.st_ino) _exit(2);
    if (::getsid(0) != ::getpid()) _exit(4);
    _exit(0);
  }
  ::close(devnull);
  int status = 0;
  pid_t reaped = ::waitpid(pid, &status, 0);
  fs::remove_all(dir);
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

}  // namespace
}  // namespace trex::oreval
