// The sandbox's default-deny seccomp filter; the precedence of its checks, and the binary search
// on the call number that runs them, are described in seccomp_policy.h.
#include "trex/oreval/seccomp_policy.h"

#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <utility>

#if defined(__x86_64__)
#include <linux/audit.h>
#endif

namespace trex::oreval {

#if defined(__x86_64__)

namespace {

// The allowed calls, one group per purpose. Unmarked calls were seen in the traces (the 186
// Bench4Opt reference programs under the sandbox, and a program importing numpy, starting a
// thread, sleeping and writing and removing a file); "variant" marks the other entry point of
// a traced call that another libc or kernel may use instead, "kept" a call not traced that
// ordinary programs make and that reaches nothing outside the process and its folder.
constexpr long kAllowed[] = {
    // Starting the interpreter: the one execve, and the loader's and libc's set-up.
    SYS_execve, SYS_arch_prctl, SYS_set_tid_address, SYS_set_robust_list, SYS_rseq,
    // Memory (mbind: OpenBLAS's NUMA placement under numpy).
    SYS_brk, SYS_mmap, SYS_munmap, SYS_mremap, SYS_mprotect, SYS_madvise, SYS_mbind,
    // Files, where Landlock lets them reach: the interpreter, its libraries, the module and
    // data.json to read, the program's own folder to write.
    SYS_read, SYS_write, SYS_pread64, SYS_lseek, SYS_openat, SYS_close, SYS_newfstatat, SYS_access,
    SYS_readlink, SYS_getdents64, SYS_getcwd, SYS_fcntl, SYS_mkdir, SYS_rename, SYS_unlink,
    SYS_open, SYS_stat, SYS_fstat, SYS_lstat, SYS_statx, SYS_faccessat, SYS_faccessat2, SYS_readlinkat,  // variant
    SYS_mkdirat, SYS_renameat, SYS_renameat2, SYS_unlinkat, SYS_rmdir,                                   // variant
    SYS_readv, SYS_writev, SYS_dup, SYS_dup2, SYS_dup3, SYS_ftruncate, SYS_fsync, SYS_fdatasync,         // kept
    // Threads (clone itself is checked below; clone3 answers ENOSYS and glibc falls back).
    SYS_futex, SYS_gettid, SYS_sched_yield, SYS_sched_getaffinity, SYS_exit, SYS_exit_group,
    SYS_restart_syscall,  // kept: the kernel's own restart of an interrupted sleep
    // Signals within the process (kill and tgkill are checked below).
    SYS_rt_sigaction, SYS_rt_sigprocmask,
    SYS_rt_sigreturn, SYS_sigaltstack,  // kept: returning from a handler; faulthandler's stack
    // Who and where it is; randomness; time (mostly answered by the vDSO, the calls are the
    // fallback).
    SYS_sysinfo, SYS_uname, SYS_getrandom, SYS_clock_nanosleep,
    SYS_nanosleep, SYS_clock_gettime, SYS_clock_getres, SYS_gettimeofday, SYS_time, SYS_getcpu,  // variant
    SYS_getpid, SYS_getppid, SYS_getuid, SYS_geteuid, SYS_getgid, SYS_getegid, SYS_getgroups,   // kept
    SYS_getresuid, SYS_getresgid, SYS_getpgrp, SYS_getpgid, SYS_getsid, SYS_getrlimit,          // kept
    SYS_getrusage, SYS_times,                                                                   // kept
};

constexpr uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr uint32_t kKill = SECCOMP_RET_KILL_PROCESS;
constexpr uint32_t kX32Bit = 0x40000000;
constexpr uint32_t errno_ret(int e) { return SECCOMP_RET_ERRNO | (uint32_t(e) & SECCOMP_RET_DATA); }
constexpr uint32_t arg_lo(int i) { return uint32_t(offsetof(struct seccomp_data, args[0]) + 8 * i); }
constexpr uint32_t arg_hi(int i) { return arg_lo(i) + 4; }
constexpr uint32_t kNr = offsetof(struct seccomp_data, nr);
constexpr uint32_t kNewNamespaces = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                                    CLONE_NEWPID | CLONE_NEWNET;
constexpr uint32_t kTiocsti = 0x5412, kTioclinux = 0x541C;
// Bits 8-15 of an ioctl request are its type; 0x89 is the sockets' (linux/sockios.h: 0x8900-0x89ff).
constexpr uint32_t kIoctlTypeMask = 0xff00, kSocketIoctlType = 0x8900;

struct Builder {
  std::vector<sock_filter> p;
  void stmt(uint16_t code, uint32_t k) { p.push_back(BPF_STMT(code, k)); }
  void jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) { p.push_back(BPF_JUMP(code, k, jt, jf)); }
  void ret(uint32_t v) { stmt(BPF_RET | BPF_K, v); }
  void load(uint32_t off) { stmt(BPF_LD | BPF_W | BPF_ABS, off); }
  // if (nr == n) return v;
  void on(long n, uint32_t v) {
    jump(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(n), 0, 1);
    ret(v);
  }
};

}  // namespace

bool seccomp_policy_available() { return true; }

namespace {

// One call's check: code that starts with the call's number in the accumulator and returns on
// every path.
using CallCheck = std::vector<sock_filter>;

CallCheck seccomp_return(uint32_t v) { return {BPF_STMT(BPF_RET | BPF_K, v)}; }

// Every call with a check of its own, in the order of precedence (the first rule for a number
// is the one that holds); any other call fails with ENOSYS.
std::vector<std::pair<uint32_t, CallCheck>> seccomp_rules(pid_t self) {
  std::vector<std::pair<uint32_t, CallCheck>> r;
  auto add = [&](long n, CallCheck block) { r.emplace_back(uint32_t(n), std::move(block)); };
  // Refused with errors a program understands.
  add(SYS_clone3, seccomp_return(errno_ret(ENOSYS)));  // flags in memory the filter cannot read: glibc falls back to clone
  for (long n : {SYS_fork, SYS_vfork, SYS_tkill, SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo, SYS_pidfd_open,
                 SYS_pidfd_send_signal, SYS_pidfd_getfd, SYS_setrlimit, SYS_ptrace, SYS_process_vm_readv,
                 SYS_process_vm_writev, SYS_unshare, SYS_setns, SYS_mount, SYS_symlink, SYS_symlinkat, SYS_link,
                 SYS_linkat, SYS_mknod, SYS_mknodat, SYS_setsid, SYS_setpgid})
    add(n, seccomp_return(errno_ret(EPERM)));
  for (long n : {SYS_socket, SYS_socketpair}) add(n, seccomp_return(errno_ret(EACCES)));

  Builder b;
  // clone: a thread (CLONE_THREAD), in no new namespace.
  b.load(arg_lo(0));
  b.jump(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 2);
  b.jump(BPF_JMP | BPF_JSET | BPF_K, kNewNamespaces, 1, 0);
  b.ret(kAllow);
  b.ret(errno_ret(EPERM));
  add(SYS_clone, std::exchange(b.p, {}));

  // kill: itself, 0 (its group) or its own group; the pid is an int, so 32 bits decide.
  b.load(arg_lo(0));
  b.jump(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(self), 3, 0);
  b.jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0);
  b.jump(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(-self), 1, 0);
  b.ret(errno_ret(EPERM));
  b.ret(kAllow);
  add(SYS_kill, std::exchange(b.p, {}));

  // tgkill: a thread of its own thread group.
  b.load(arg_lo(0));
  b.jump(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(self), 1, 0);
  b.ret(errno_ret(EPERM));
  b.ret(kAllow);
  add(SYS_tgkill, std::exchange(b.p, {}));

  // prlimit64: reading (new_limit == NULL) only.
  b.load(arg_lo(2));
  b.jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2);
  b.load(arg_hi(2));
  b.jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0);
  b.ret(errno_ret(EPERM));
  b.ret(kAllow);
  add(SYS_prlimit64, std::exchange(b.p, {}));

  // ioctl: anything but pushing input into a terminal (it has none, after setsid) and the
  // socket requests (type 0x89: SIOCGIFCONF, SIOCGIFADDR, SIOCGIFHWADDR, ...). Why the latter:
  // fd 3, the solve channel, is a socket trex made in the evaluator's network namespace, and a
  // socket's interface requests read the namespace it was made in, so they would list the
  // evaluator's interfaces, addresses and MAC addresses. The solve channel needs none.
  b.load(arg_lo(1));
  b.jump(BPF_JMP | BPF_JEQ | BPF_K, kTiocsti, 4, 0);
  b.jump(BPF_JMP | BPF_JEQ | BPF_K, kTioclinux, 3, 0);
  b.stmt(BPF_ALU | BPF_AND | BPF_K, kIoctlTypeMask);  // the request's type byte, any number or size
  b.jump(BPF_JMP | BPF_JEQ | BPF_K, kSocketIoctlType, 1, 0);
  b.ret(kAllow);
  b.ret(errno_ret(EPERM));
  add(SYS_ioctl, std::exchange(b.p, {}));

  // prctl: naming threads and reading its own settings.
  b.load(arg_lo(0));
  b.jump(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_NAME, 2, 0);
  b.jump(BPF_JMP | BPF_JEQ | BPF_K, PR_GET_NAME, 1, 0);
  b.ret(errno_ret(EPERM));
  b.ret(kAllow);
  add(SYS_prctl, std::exchange(b.p, {}));

  for (long n : kAllowed) add(n, seccomp_return(kAllow));
  return r;
}

void append_code(CallCheck& to, const CallCheck& code) { to.insert(to.end(), code.begin(), code.end()); }

// The checks of `rules` (sorted by number, one rule per number) as a binary search on the
// number: about log2(n) comparisons to a call's own check instead of one per rule before it.
// The kernel runs the filter once per system call number when it installs it (its cache of
// calls allowed whatever their arguments), with interrupts off: one check after another, the
// ~120 rules made that about 0.15 ms of every program's start.
// A split whose lower half is longer than `longest` instructions jumps over it with `ja`.
CallCheck search_by_number(const std::pair<uint32_t, CallCheck>* first, size_t n, size_t longest) {
  CallCheck code;
  if (n <= 4) {
    for (size_t i = 0; i < n; ++i) {
      const CallCheck& block = first[i].second;
      code.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, first[i].first, 0, uint8_t(block.size())));
      append_code(code, block);
    }
    code.push_back(BPF_STMT(BPF_RET | BPF_K, errno_ret(ENOSYS)));
    return code;
  }
  size_t half = n / 2;
  CallCheck below = search_by_number(first, half, longest), above = search_by_number(first + half, n - half, longest);
  if (below.size() <= longest) {
    code.push_back(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, first[half].first, uint8_t(below.size()), 0));
  } else {
    // a >= split: on to the ja, which skips the lower half; else over the ja into it.
    code.push_back(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, first[half].first, 0, 1));
    code.push_back(BPF_STMT(BPF_JMP | BPF_JA, uint32_t(below.size())));
  }
  append_code(code, below);
  append_code(code, above);
  return code;
}

CallCheck arch_checks() {
  Builder b;
  // Architecture first: a 32-bit (int 0x80) or x32 call has other numbers.
  b.load(offsetof(struct seccomp_data, arch));
  b.jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
  b.ret(kKill);
  b.load(kNr);
  b.jump(BPF_JMP | BPF_JGE | BPF_K, kX32Bit, 0, 1);
  b.ret(kKill);
  return b.p;
}

}  // namespace

std::vector<sock_filter> seccomp_policy(pid_t self, size_t longest_conditional_jump) {
  std::vector<std::pair<uint32_t, CallCheck>> all = seccomp_rules(self), sorted;
  // One rule per number, the first; then by number.
  for (auto& rule : all) {
    bool seen = false;
    for (const auto& kept : sorted) seen = seen || kept.first == rule.first;
    if (!seen) sorted.push_back(std::move(rule));
  }
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  CallCheck code = arch_checks();
  size_t longest = std::min(longest_conditional_jump, kSeccompLongestConditionalJump);
  append_code(code, search_by_number(sorted.data(), sorted.size(), longest));
  return code;
}

std::vector<sock_filter> seccomp_policy_in_order(pid_t self) {
  CallCheck code = arch_checks();
  for (const auto& [nr, block] : seccomp_rules(self)) {
    code.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, uint8_t(block.size())));
    append_code(code, block);
  }
  code.push_back(BPF_STMT(BPF_RET | BPF_K, errno_ret(ENOSYS)));
  return code;
}

#else

bool seccomp_policy_available() { return false; }
std::vector<sock_filter> seccomp_policy(pid_t, size_t) { return {}; }
std::vector<sock_filter> seccomp_policy_in_order(pid_t) { return {}; }

#endif

}  // namespace trex::oreval
