// close_fds_from closes every descriptor from the lowest on but the kept ones, with
// close_range and, where the kernel refuses it, one by one.
#include "trex/oreval/close_fds.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace trex::oreval {
namespace {

// In a child: opens descriptors, closes from 3 keeping one, and exits 0 when exactly the kept
// one (and 0..2) is left. With `refuse_close_range`, close_range answers ENOSYS first.
int check_in_child(bool refuse_close_range) {
  pid_t pid = fork();
  if (pid == 0) {
    int fds[6];
    for (int& fd : fds) fd = open("/dev/null", O_RDONLY);
    int keep = fds[3];
    if (refuse_close_range) {
      sock_filter filter[] = {
          BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_close_range, 0, 1),
          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      };
      sock_fprog prog{uint16_t(sizeof filter / sizeof filter[0]), filter};
      if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) _exit(10);
    }
    if (!close_fds_from(3, &keep, 1)) _exit(11);
    for (int fd = 3; fd < 1024; ++fd) {
      bool open_now = fcntl(fd, F_GETFD) >= 0;
      if (open_now != (fd == keep)) _exit(12);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(CloseFds, ClosesAllButTheKept) { EXPECT_EQ(check_in_child(false), 0); }

TEST(CloseFds, FallsBackWhenCloseRangeIsRefused) { EXPECT_EQ(check_in_child(true), 0); }

}  // namespace
}  // namespace trex::oreval
