// The child's side of the sandbox (sandbox_child.h); the parent's side is sandbox.cc.
#include "trex/oreval/sandbox_child.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "trex/oreval/close_fds.h"
#include "trex/oreval/seccomp_policy.h"

namespace trex::oreval {

namespace {

// Landlock ABI layout, written out so that older kernel headers still build.
struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};
constexpr uint64_t kFsExecute = 1ULL << 0, kFsWriteFile = 1ULL << 1, kFsReadFile = 1ULL << 2,
                   kFsReadDir = 1ULL << 3, kFsTruncate = 1ULL << 14;
constexpr uint64_t kNetBindTcp = 1ULL << 0, kNetConnectTcp = 1ULL << 1;
constexpr uint64_t kScopeAbstractUnix = 1ULL << 0, kScopeSignal = 1ULL << 1;

uint64_t fs_rights_for_abi(int abi) {
  uint64_t all = (1ULL << 13) - 1;       // ABI 1: execute .. make_sym
  if (abi >= 2) all |= 1ULL << 13;       // refer
  if (abi >= 3) all |= kFsTruncate;      // truncate
  if (abi >= 5) all |= 1ULL << 15;       // ioctl_dev
  return all;
}

int landlock_abi() {
#ifdef SYS_landlock_create_ruleset
  long v = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return v < 0 ? 0 : int(v);
#else
  return 0;
#endif
}

// Probed in a throwaway child so the caller's namespaces are untouched.
bool unshare_allowed(int flags) {
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) _exit(unshare(flags) == 0 ? 0 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Set by sandbox_probe_in_shared_network_namespace before the probe runs: this process made a
// network namespace of its own (moved into it), which answers the probe's question for it.
bool g_netns_made_here = false;
bool g_probed = false;

const SandboxProbe& sandbox_probe_impl() {
  static const SandboxProbe p = [] {
    SandboxProbe q;
    q.landlock = landlock_abi();
    q.root = geteuid() == 0;
    if (q.root) q.netns = g_netns_made_here || unshare_allowed(CLONE_NEWNET);
    else q.userns = unshare_allowed(CLONE_NEWUSER | CLONE_NEWNET);
    q.seccomp = seccomp_policy_available();
    g_probed = true;
    return q;
  }();
  return p;
}

}  // namespace

[[noreturn]] void sandbox_child_fail(const char* what) {
  const char* msg = strerror(errno);  // strerror of a known errno returns a static string
  (void)!write(2, "trex sandbox: ", 14);
  (void)!write(2, what, strlen(what));
  (void)!write(2, ": ", 2);
  (void)!write(2, msg, strlen(msg));
  (void)!write(2, "\n", 1);
  _exit(126);
}

namespace {

void set_limit(int resource, rlim_t value) {
  rlimit r{value, value};
  if (setrlimit(resource, &r) != 0) sandbox_child_fail("setrlimit");
}

}  // namespace

namespace {

// unshare(CLONE_NEWUSER | CLONE_NEWNET) and then no capability: unshare gives the child every
// capability in its new namespace. An execve would drop them, but a warm interpreter's child
// runs the program without one, so they are dropped here, on both paths. 0 or the errno.
int enter_user_namespace(const char** what) {
  if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
    *what = "unshare(CLONE_NEWUSER | CLONE_NEWNET)";
    return errno;
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capset, &header, none) != 0) {
    *what = "capset(none)";
    return errno;
  }
  return 0;
}

}  // namespace

namespace {

// Set once, in a warm interpreter before its first fork; its children inherit it with the
// namespace itself.
bool g_shared_netns = false;

}  // namespace

int sandbox_share_network_namespace(const SandboxProbe& probe) {
  if (g_shared_netns) return 1;
  if (!probe.root || !probe.netns || !probe.seccomp) return 0;
  if (unshare(CLONE_NEWNET) != 0) return 0;  // each child makes its own, as before
  g_shared_netns = true;
  return 1;
}

bool sandbox_network_namespace_shared() { return g_shared_netns; }

int sandbox_probe_in_shared_network_namespace() {
  // The condition sandbox_share_network_namespace puts on the probe, less the network namespace
  // itself, which the unshare answers.
  if (!g_probed && !g_shared_netns && geteuid() == 0 && seccomp_policy_available() && unshare(CLONE_NEWNET) == 0) {
    g_netns_made_here = true;
    g_shared_netns = true;
  }
  return sandbox_share_network_namespace(sandbox_probe());
}

int sandbox_prepare(const SandboxProbe& probe, const char** what) {
  // A session of its own: its own process group (the parent kills that) and no controlling
  // terminal to push input into.
  if (setsid() < 0) {
    *what = "setsid";
    return errno;
  }
  if (probe.root) {
    if (probe.netns && !g_shared_netns && unshare(CLONE_NEWNET) != 0) {
      *what = "unshare(CLONE_NEWNET)";
      return errno;
    }
  } else if (probe.userns) {
    return enter_user_namespace(what);
  }
  return 0;
}

void enter_sandbox(const ChildPlan& plan, const sock_filter* filter, size_t filter_len) {
  // A session of its own: its own process group (the parent kills that) and no controlling
  // terminal to push input into. A prepared child made it in sandbox_prepare.
  if (!plan.prepared && setsid() < 0) sandbox_child_fail("setsid");
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull < 0 || dup2(devnull, 0) < 0) sandbox_child_fail("stdin");
  if (dup2(plan.out_fd, 1) < 0 || dup2(plan.err_fd, 2) < 0 || dup2(plan.channel_fd, 3) < 0) sandbox_child_fail("dup2");
  if (!close_fds_from(4, nullptr, 0)) sandbox_child_fail("closing inherited descriptors");
  if (chdir(plan.workdir) != 0) sandbox_child_fail("chdir");
  // The Landlock rules are made while the child still has the evaluator's identity, so paths
  // the unprivileged one cannot reach by name (a private TMPDIR) still get their rule.
  int ruleset = -1;
#ifdef SYS_landlock_create_ruleset
  if (plan.probe.landlock > 0) {
    int abi = plan.probe.landlock;
    RulesetAttr attr{fs_rights_for_abi(abi), abi >= 4 ? kNetBindTcp | kNetConnectTcp : 0,
                     abi >= 6 ? kScopeAbstractUnix | kScopeSignal : 0};
    size_t size = abi >= 6 ? sizeof(RulesetAttr) : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
    ruleset = int(syscall(SYS_landlock_create_ruleset, &attr, size, 0));
    if (ruleset < 0) sandbox_child_fail("landlock_create_ruleset");
    auto allow = [&](const char* path, uint64_t rights) {
      int fd = open(path, O_PATH | O_CLOEXEC);
      if (fd < 0) return;  // a path absent on this machine grants nothing
      struct stat st;
      if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
        rights &= kFsExecute | kFsWriteFile | kFsReadFile | (abi >= 3 ? kFsTruncate : 0);
      landlock_path_beneath_attr rule{rights & fs_rights_for_abi(abi), fd};
      if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0)
        sandbox_child_fail("landlock_add_rule");
      close(fd);
    };
    for (const char* path : plan.read_only) allow(path, kFsExecute | kFsReadFile | kFsReadDir);
    allow("/dev/null", kFsReadFile | kFsWriteFile);
    allow(".", fs_rights_for_abi(abi));  // the working directory, by descriptor rather than name
  }
#endif
  set_limit(RLIMIT_CPU, rlim_t(plan.limits.cpu_s));
  set_limit(RLIMIT_AS, rlim_t(plan.limits.memory_bytes));
  set_limit(RLIMIT_FSIZE, rlim_t(plan.limits.file_bytes));
  set_limit(RLIMIT_NOFILE, rlim_t(plan.limits.open_files));
  set_limit(RLIMIT_CORE, 0);
  if (plan.probe.root) {
    if (plan.probe.netns && !plan.prepared && !g_shared_netns && unshare(CLONE_NEWNET) != 0)
      sandbox_child_fail("unshare(CLONE_NEWNET)");
    // Counts every process and thread of uid nobody, so it is generous; it matters only
    // where seccomp (which refuses fork) is unavailable.
    set_limit(RLIMIT_NPROC, 512);
    if (setgroups(0, nullptr) != 0 || setgid(kSandboxNogroup) != 0 || setuid(kSandboxNobody) != 0) sandbox_child_fail("setuid(nobody)");
  } else if (plan.probe.userns) {
    // No uid map is written: inside, the child is the overflow uid; outside, the kernel still
    // checks files against the invoking user (also for the Landlock rules a prepared child
    // opens after entering the namespace), which Landlock confines.
    const char* what = nullptr;
    if (!plan.prepared && enter_user_namespace(&what) != 0) sandbox_child_fail(what);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) sandbox_child_fail("no_new_privs");
#ifdef SYS_landlock_create_ruleset
  if (ruleset >= 0) {
    if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) sandbox_child_fail("landlock_restrict_self");
    close(ruleset);
  }
#endif
  if (filter_len > 0) {
    sock_fprog prog{uint16_t(filter_len), const_cast<sock_filter*>(filter)};
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) sandbox_child_fail("seccomp");
  }
}

const SandboxProbe& sandbox_probe() { return sandbox_probe_impl(); }

// Here, beside the probe, so that trex and the warm interpreter's library (sandbox_enter.cc)
// word it with one definition: the pool compares the two words for equality.
std::string sandbox_isolation() {
  const SandboxProbe& p = sandbox_probe();
  std::string s;
  if (p.netns || p.userns) s += "netns ";
  if (p.landlock) s += "landlock-abi" + std::to_string(p.landlock) + " ";
  if (p.seccomp) s += "seccomp ";
  s += "rlimits";
  if (p.root) s += " nobody";
  if (p.userns) s += " userns";
  return s;
}

std::vector<const char*> missing_layers(const SandboxProbe& p) {
  std::vector<const char*> missing;
  if (!p.landlock) missing.push_back("landlock");
  if (!p.seccomp) missing.push_back("seccomp");
  if (!p.root && !p.userns) missing.push_back("unprivileged uid (user namespace)");
  return missing;
}

}  // namespace trex::oreval
