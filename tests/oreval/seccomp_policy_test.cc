// The seccomp filter's layout: the binary search on the call number (seccomp_policy) decides
// every call as the same rules checked one after another (seccomp_policy_in_order) do, and
// reaches a call's own check in a few comparisons. The filters are run here by a small
// classic-BPF interpreter (the instructions the policy uses) on every call number and on
// arguments that each check tells apart; Hostile.* runs the installed filter in the sandbox.
// The layout with `ja` (a split whose lower half is longer than a conditional jump reaches) is
// forced by a lower jump limit, compared the same way and installed in a forked child.
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "trex/oreval/seccomp_policy.h"

namespace trex::oreval {
namespace {

struct SeccompVerdict {
  uint32_t ret = 0;
  int steps = 0;         // instructions run
  int always_jumps = 0;  // `ja` run
};

// Runs `filter` on `d` as the kernel would (only what the policy uses: loads of the data's
// words, the ALU and, the jumps with constants, ja, ret). Fails the test on anything else or
// on a jump out of the program.
SeccompVerdict run_seccomp_filter(const std::vector<sock_filter>& filter, const seccomp_data& d) {
  SeccompVerdict v;
  uint32_t a = 0;
  for (size_t pc = 0; pc < filter.size(); ++pc) {
    const sock_filter& in = filter[pc];
    ++v.steps;
    switch (in.code) {
      case BPF_LD | BPF_W | BPF_ABS:
        EXPECT_LE(in.k + 4, sizeof d);
        memcpy(&a, reinterpret_cast<const char*>(&d) + in.k, 4);
        break;
      case BPF_ALU | BPF_AND | BPF_K: a &= in.k; break;
      case BPF_JMP | BPF_JA:
        pc += in.k;
        ++v.always_jumps;
        break;
      case BPF_JMP | BPF_JEQ | BPF_K: pc += a == in.k ? in.jt : in.jf; break;
      case BPF_JMP | BPF_JGE | BPF_K: pc += a >= in.k ? in.jt : in.jf; break;
      case BPF_JMP | BPF_JGT | BPF_K: pc += a > in.k ? in.jt : in.jf; break;
      case BPF_JMP | BPF_JSET | BPF_K: pc += (a & in.k) ? in.jt : in.jf; break;
      case BPF_RET | BPF_K: v.ret = in.k; return v;
      default: ADD_FAILURE() << "instruction " << in.code << " at " << pc; return v;
    }
  }
  ADD_FAILURE() << "ran off the end of the filter";
  return v;
}

seccomp_data seccomp_call(uint32_t arch, uint32_t nr, uint64_t arg) {
  seccomp_data d{};
  d.arch = arch;
  d.nr = int(nr);
  for (auto& x : d.args) x = arg;
  return d;
}

constexpr pid_t kSeccompTestSelf = 4242;

std::vector<uint64_t> seccomp_test_arguments() {
  return {0, 1, uint64_t(kSeccompTestSelf), uint64_t(uint32_t(-kSeccompTestSelf)), uint64_t(-int64_t(kSeccompTestSelf)),
          4243, CLONE_THREAD, CLONE_THREAD | CLONE_NEWNET, CLONE_THREAD | CLONE_NEWUSER, CLONE_NEWNS, 0x5412, 0x541C,
          0x8912, 0x89ff, 0x5401, PR_SET_NAME, PR_GET_NAME, PR_SET_SECCOMP, uint64_t(1) << 32, 0xffffffffu,
          ~uint64_t(0)};
}

TEST(SeccompPolicy, TheSearchDecidesEveryCallAsTheRulesInOrder) {
  if (!seccomp_policy_available()) GTEST_SKIP() << "no seccomp filter in this build";
  std::vector<sock_filter> search = seccomp_policy(kSeccompTestSelf);
  std::vector<sock_filter> in_order = seccomp_policy_in_order(kSeccompTestSelf);
  std::vector<uint32_t> numbers;
  for (uint32_t nr = 0; nr < 1024; ++nr) numbers.push_back(nr);
  for (uint32_t nr : {0x40000000u, 0x40000001u, 0x40000000u + SYS_read, 0x7fffffffu, 0xffffffffu}) numbers.push_back(nr);
  int checked = 0;
  for (uint32_t arch : {uint32_t(AUDIT_ARCH_X86_64), uint32_t(AUDIT_ARCH_I386), 0u})
    for (uint32_t nr : numbers)
      for (uint64_t arg : seccomp_test_arguments()) {
        seccomp_data d = seccomp_call(arch, nr, arg);
        ASSERT_EQ(run_seccomp_filter(search, d).ret, run_seccomp_filter(in_order, d).ret)
            << "arch " << arch << " nr " << nr << " arg " << arg;
        ++checked;
      }
  EXPECT_GT(checked, 60000);
}

TEST(SeccompPolicy, TheSearchKeepsThePolicy) {
  if (!seccomp_policy_available()) GTEST_SKIP() << "no seccomp filter in this build";
  std::vector<sock_filter> f = seccomp_policy(kSeccompTestSelf);
  auto verdict = [&](uint32_t nr, uint64_t arg, uint32_t arch = AUDIT_ARCH_X86_64) {
    return run_seccomp_filter(f, seccomp_call(arch, nr, arg)).ret;
  };
  const uint32_t allow = SECCOMP_RET_ALLOW, kill = SECCOMP_RET_KILL_PROCESS;
  auto err = [](int e) { return uint32_t(SECCOMP_RET_ERRNO | uint32_t(e)); };
  EXPECT_EQ(verdict(SYS_read, 0), allow);
  EXPECT_EQ(verdict(SYS_exit_group, 0), allow);
  EXPECT_EQ(verdict(SYS_read, 0, AUDIT_ARCH_I386), kill);
  EXPECT_EQ(verdict(0x40000000u + SYS_read, 0), kill);
  EXPECT_EQ(verdict(SYS_socket, 1), err(EACCES));
  EXPECT_EQ(verdict(SYS_fork, 0), err(EPERM));
  EXPECT_EQ(verdict(SYS_clone3, 0), err(ENOSYS));
  EXPECT_EQ(verdict(1000, 0), err(ENOSYS));
  EXPECT_EQ(verdict(SYS_clone, CLONE_THREAD), allow);
  EXPECT_EQ(verdict(SYS_clone, CLONE_THREAD | CLONE_NEWNET), err(EPERM));
  EXPECT_EQ(verdict(SYS_clone, 0), err(EPERM));
  EXPECT_EQ(verdict(SYS_kill, uint64_t(kSeccompTestSelf)), allow);
  EXPECT_EQ(verdict(SYS_kill, uint64_t(uint32_t(-kSeccompTestSelf))), allow);
  EXPECT_EQ(verdict(SYS_kill, 4243), err(EPERM));
  EXPECT_EQ(verdict(SYS_ioctl, 0x5401), allow);
  EXPECT_EQ(verdict(SYS_ioctl, 0x8912), err(EPERM));
  EXPECT_EQ(verdict(SYS_prlimit64, 0), allow);
  EXPECT_EQ(verdict(SYS_prlimit64, uint64_t(1) << 32), err(EPERM));
}

// Every call number a table could hold (below 4096), the x32 ones and the top of the range.
std::vector<uint32_t> seccomp_test_numbers() {
  std::vector<uint32_t> numbers;
  for (uint32_t nr = 0; nr < 4096; ++nr) numbers.push_back(nr);
  for (uint32_t nr : {0x40000000u, 0x40000001u, 0x40000000u + SYS_read, 0x7fffffffu, 0x80000000u, 0xfffffffeu,
                      0xffffffffu})
    numbers.push_back(nr);
  return numbers;
}

size_t seccomp_always_jumps(const std::vector<sock_filter>& filter) {
  size_t n = 0;
  for (const sock_filter& in : filter) n += in.code == (BPF_JMP | BPF_JA);
  return n;
}

// The shipped rules never need `ja` at the real limit (255), so these limits force it: 0 (every
// split), 3, and ones where near splits jump short and outer ones with `ja`.
constexpr size_t kSeccompForcedJumpLimits[] = {0, 3, 16, 40, 100};

TEST(SeccompPolicy, TheSearchWithLongJumpsDecidesEveryCallAsTheRulesInOrder) {
  if (!seccomp_policy_available()) GTEST_SKIP() << "no seccomp filter in this build";
  std::vector<sock_filter> in_order = seccomp_policy_in_order(kSeccompTestSelf);
  std::vector<sock_filter> shipped = seccomp_policy(kSeccompTestSelf);
  std::vector<std::vector<sock_filter>> forced;
  for (size_t limit : kSeccompForcedJumpLimits) {
    forced.push_back(seccomp_policy(kSeccompTestSelf, limit));
    EXPECT_GT(seccomp_always_jumps(forced.back()), 0u) << "limit " << limit;
    EXPECT_LE(forced.back().size(), size_t(BPF_MAXINSNS)) << "limit " << limit;
    // Every conditional jump stays within the limit it was built for (leaves' JEQ skip a call's
    // own check, at most 7 instructions).
    for (const sock_filter& in : forced.back()) {
      if (BPF_CLASS(in.code) == BPF_JMP && BPF_OP(in.code) != BPF_JA) {
        EXPECT_LE(size_t(std::max(in.jt, in.jf)), std::max<size_t>(limit, 7)) << "limit " << limit;
      }
    }
  }
  std::vector<long> ja_run(forced.size(), 0);
  long checked = 0;
  for (uint32_t arch : {uint32_t(AUDIT_ARCH_X86_64), uint32_t(AUDIT_ARCH_I386), 0u})
    for (uint32_t nr : seccomp_test_numbers())
      for (uint64_t arg : seccomp_test_arguments()) {
        seccomp_data d = seccomp_call(arch, nr, arg);
        uint32_t want = run_seccomp_filter(in_order, d).ret;
        ASSERT_EQ(run_seccomp_filter(shipped, d).ret, want) << "arch " << arch << " nr " << nr << " arg " << arg;
        for (size_t i = 0; i < forced.size(); ++i) {
          SeccompVerdict v = run_seccomp_filter(forced[i], d);
          ASSERT_EQ(v.ret, want) << "limit " << kSeccompForcedJumpLimits[i] << " arch " << arch << " nr " << nr
                                 << " arg " << arg;
          ja_run[i] += v.always_jumps;
        }
        ++checked;
      }
  EXPECT_GT(checked, 250000);
  for (size_t i = 0; i < forced.size(); ++i) EXPECT_GT(ja_run[i], 0) << "limit " << kSeccompForcedJumpLimits[i];
}

// The kernel checks a filter's jumps when it installs it: the `ja` layout is accepted, and the
// installed filter decides calls from the bottom to the top of the table as the policy says.
// Exit codes: 0 all as expected, 10 + the failed check's index.
int seccomp_forced_jumps_in_child(size_t limit) {
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<sock_filter> filter = seccomp_policy(getpid(), limit);
    if (seccomp_always_jumps(filter) == 0) _exit(2);
    sock_fprog prog{uint16_t(filter.size()), filter.data()};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(3);
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) _exit(4);
    auto refused = [](long r, int e) { return r == -1 && errno == e; };
    rlimit lim{};
    const bool checks[] = {
        syscall(SYS_getppid) > 0,                                         // allowed, low number
        syscall(SYS_kill, getpid(), 0) == 0,                              // its own check: itself
        refused(syscall(SYS_kill, 1, 0), EPERM),                          // its own check: another process
        refused(syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0), EACCES),    // refused
        refused(syscall(SYS_setpgid, 0, 0), EPERM),                       // refused
        syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, nullptr, &lim) == 0,     // its own check: reading
        refused(syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &lim, nullptr), EPERM),
        refused(syscall(SYS_clone3, nullptr, 0), ENOSYS),                 // refused, highest rule
        refused(syscall(1000), ENOSYS),                                   // no rule
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; ++i)
      if (!checks[i]) _exit(int(10 + i));
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(SeccompPolicy, TheKernelInstallsTheSearchWithLongJumps) {
  if (!seccomp_policy_available()) GTEST_SKIP() << "no seccomp filter in this build";
  for (size_t limit : kSeccompForcedJumpLimits) EXPECT_EQ(seccomp_forced_jumps_in_child(limit), 0) << "limit " << limit;
}

// The kernel runs the filter for every call number when it installs it (the cache of calls
// allowed whatever their arguments), with interrupts off, in every program's child: the
// search reaches any call's check in a few comparisons where the rules in order took one per
// rule before it.
TEST(SeccompPolicy, EveryCallIsDecidedInAFewComparisons) {
  if (!seccomp_policy_available()) GTEST_SKIP() << "no seccomp filter in this build";
  std::vector<sock_filter> search = seccomp_policy(kSeccompTestSelf);
  std::vector<sock_filter> in_order = seccomp_policy_in_order(kSeccompTestSelf);
  int most_search = 0, most_in_order = 0;
  long all_search = 0, all_in_order = 0;
  for (uint32_t nr = 0; nr < 512; ++nr) {
    seccomp_data d = seccomp_call(AUDIT_ARCH_X86_64, nr, 0);
    int s = run_seccomp_filter(search, d).steps, o = run_seccomp_filter(in_order, d).steps;
    most_search = std::max(most_search, s);
    most_in_order = std::max(most_in_order, o);
    all_search += s;
    all_in_order += o;
  }
  EXPECT_LE(most_search, 24);
  EXPECT_GT(most_in_order, 100);
  EXPECT_LT(all_search * 5, all_in_order);
}

}  // namespace
}  // namespace trex::oreval
