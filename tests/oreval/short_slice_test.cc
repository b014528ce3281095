// request_short_slice gives a thread the short slice where the kernel keeps one, keeps its
// policy and nice value, is inherited by a process forked after it, and asks nothing with
// TREX_SHORT_SLICE=0. Each case runs in a forked child: the test process keeps its own slice.
#include "trex/oreval/short_slice.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace trex::oreval {
namespace {

struct Attr {  // struct sched_attr, first version (48 bytes)
  uint32_t size, policy;
  uint64_t flags;
  int32_t nice;
  uint32_t priority;
  uint64_t runtime, deadline, period;
};

Attr attr_of_this_thread() {
  Attr a;
  std::memset(&a, 0, sizeof(a));
  if (syscall(SYS_sched_getattr, 0, &a, unsigned(sizeof(a)), 0u) != 0) _exit(20);
  return a;
}

// Runs `body` in a forked child and returns its exit status (or -1 when it did not exit).
template <typename F>
int in_child(F body) {
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

constexpr int kNoCustomSlice = 77;  // the kernel keeps none for SCHED_OTHER (before 6.12)

TEST(ShortSlice, KeepsPolicyAndNice) {
  int rc = in_child([] {
    unsetenv("TREX_SHORT_SLICE");
    if (setpriority(PRIO_PROCESS, 0, 3) != 0) return 10;  // a nice value of its own, kept
    Attr before = attr_of_this_thread();
    bool set = request_short_slice(0);
    Attr after = attr_of_this_thread();
    if (after.policy != before.policy || after.nice != 3) return 11;
    if (!set) return after.runtime == before.runtime ? kNoCustomSlice : 12;
    return after.runtime == kShortSliceNs ? 0 : 13;
  });
  if (rc == kNoCustomSlice) GTEST_SKIP() << "this kernel keeps no custom slice for SCHED_OTHER";
  EXPECT_EQ(rc, 0);
}

TEST(ShortSlice, ForkedProcessInheritsIt) {
  int rc = in_child([] {
    unsetenv("TREX_SHORT_SLICE");
    if (!request_short_slice(0)) return kNoCustomSlice;
    pid_t pid = fork();
    if (pid == 0) _exit(attr_of_this_thread().runtime == kShortSliceNs ? 0 : 1);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 14;
    return WEXITSTATUS(status);
  });
  if (rc == kNoCustomSlice) GTEST_SKIP() << "this kernel keeps no custom slice for SCHED_OTHER";
  EXPECT_EQ(rc, 0);
}

TEST(ShortSlice, TurnedOffByEnvironment) {
  int rc = in_child([] {
    setenv("TREX_SHORT_SLICE", "0", 1);
    Attr before = attr_of_this_thread();
    if (request_short_slice(0)) return 15;
    return attr_of_this_thread().runtime == before.runtime ? 0 : 16;
  });
  EXPECT_EQ(rc, 0);
}

TEST(ShortSlice, LeavesAnotherPolicyAlone) {
  int rc = in_child([] {
    unsetenv("TREX_SHORT_SLICE");
    sched_param p{};
    if (sched_setscheduler(0, SCHED_BATCH, &p) != 0) return 17;
    Attr before = attr_of_this_thread();
    if (request_short_slice(0)) return 18;
    Attr after = attr_of_this_thread();
    return after.policy == SCHED_BATCH && after.runtime == before.runtime ? 0 : 19;
  });
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace trex::oreval
