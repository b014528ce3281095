// enter_sandbox, the layers both kinds of child put on themselves (a fork of trex that executes
// the interpreter, and a fork of the warm interpreter that runs the program in place): after it
// the child holds no capability, effective or permitted. The warm child never calls execve,
// so nothing but enter_sandbox may drop what unshare(CLONE_NEWUSER) or root gave it.
#include "trex/oreval/sandbox_child.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace trex::oreval {
namespace {

namespace fs = std::filesystem;

TEST(SandboxChild, LeavesNoCapability) {
  if (!missing_layers(sandbox_probe()).empty())
    GTEST_SKIP() << "a sandbox layer is missing (" << missing_layers(sandbox_probe()).front() << ")";
  fs::path dir = fs::temp_directory_path() / ("trex_sandbox_child_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all);  // the unprivileged identity may enter it
  std::string workdir = dir.string();
  ChildPlan plan;
  plan.workdir = workdir.c_str();
  plan.probe = sandbox_probe();
  int devnull = ::open("/dev/null", O_WRONLY);
  ASSERT_GE(devnull, 0);
  plan.out_fd = plan.err_fd = plan.channel_fd = devnull;
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    enter_sandbox(plan, nullptr, 0);  // without the seccomp filter, so that capget may run
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = {};
    if (syscall(SYS_capget, &header, caps) != 0) _exit(3);
    for (const auto& c : caps)
      if (c.effective != 0 || c.permitted != 0) _exit(1);
    _exit(0);
  }
  ::close(devnull);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  fs::remove_all(dir);
  ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << (WEXITSTATUS(status) == 1   ? "a capability is left"
                                        : WEXITSTATUS(status) == 126 ? "a layer failed"
                                                                     : "capget failed");
}

}  // namespace
}  // namespace trex::oreval
