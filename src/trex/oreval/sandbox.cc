// The sandbox for untrusted programs; what it does, in order, is listed in sandbox.h.
//
// Everything the child runs between fork and exec is a raw system call on memory prepared
// before fork: the parent may have other threads, so the child must not allocate.
#include "trex/oreval/sandbox.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "trex/oreval/close_fds.h"
#include "trex/oreval/seccomp_policy.h"
#include "trex/util/error.h"

namespace trex::oreval {

namespace {

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

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

struct Probe {
  int landlock = 0;
  bool root = false;
  bool netns = false;   // root: a network namespace of its own
  bool userns = false;  // not root: a user namespace (unmapped uid) with a network namespace
  bool seccomp = false;
};

const Probe& probe() {
  static const Probe p = [] {
    Probe q;
    q.landlock = landlock_abi();
    q.root = geteuid() == 0;
    if (q.root) q.netns = unshare_allowed(CLONE_NEWNET);
    else q.userns = unshare_allowed(CLONE_NEWUSER | CLONE_NEWNET);
    q.seccomp = seccomp_policy_available();
    return q;
  }();
  return p;
}

// --- the child -----------------------------------------------------------------------------

struct ChildPlan {
  std::vector<char*> argv, envp;
  const char* workdir;
  std::vector<const char*> read_only;
  SandboxLimits limits;
  int out_fd, err_fd, channel_fd;
  Probe probe;
};

[[noreturn]] void child_fail(const char* what) {
  const char* msg = strerror(errno);  // strerror of a known errno returns a static string
  (void)!write(2, "trex sandbox: ", 14);
  (void)!write(2, what, strlen(what));
  (void)!write(2, ": ", 2);
  (void)!write(2, msg, strlen(msg));
  (void)!write(2, "\n", 1);
  _exit(126);
}

void set_limit(int resource, rlim_t value) {
  rlimit r{value, value};
  if (setrlimit(resource, &r) != 0) child_fail("setrlimit");
}

[[noreturn]] void run_child(const ChildPlan& plan, const sock_filter* filter, size_t filter_len) {
  // A session of its own: its own process group (the parent kills that) and no controlling
  // terminal to push input into.
  if (setsid() < 0) child_fail("setsid");
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull < 0 || dup2(devnull, 0) < 0) child_fail("stdin");
  if (dup2(plan.out_fd, 1) < 0 || dup2(plan.err_fd, 2) < 0 || dup2(plan.channel_fd, 3) < 0) child_fail("dup2");
  if (!close_fds_from(4, nullptr, 0)) child_fail("closing inherited descriptors");
  if (chdir(plan.workdir) != 0) child_fail("chdir");
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
    if (ruleset < 0) child_fail("landlock_create_ruleset");
    auto allow = [&](const char* path, uint64_t rights) {
      int fd = open(path, O_PATH | O_CLOEXEC);
      if (fd < 0) return;  // a path absent on this machine grants nothing
      struct stat st;
      if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
        rights &= kFsExecute | kFsWriteFile | kFsReadFile | (abi >= 3 ? kFsTruncate : 0);
      landlock_path_beneath_attr rule{rights & fs_rights_for_abi(abi), fd};
      if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0)
        child_fail("landlock_add_rule");
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
    if (plan.probe.netns && unshare(CLONE_NEWNET) != 0) child_fail("unshare(CLONE_NEWNET)");
    // Counts every process and thread of uid nobody, so it is generous; it matters only
    // where seccomp (which refuses fork) is unavailable.
    set_limit(RLIMIT_NPROC, 512);
    if (setgroups(0, nullptr) != 0 || setgid(kNogroup) != 0 || setuid(kNobody) != 0) child_fail("setuid(nobody)");
  } else if (plan.probe.userns) {
    // No uid map is written: inside, the child is the overflow uid, with no capability left
    // after execve; outside, the kernel still checks files against the invoking user, which
    // Landlock confines.
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) child_fail("unshare(CLONE_NEWUSER | CLONE_NEWNET)");
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) child_fail("no_new_privs");
#ifdef SYS_landlock_create_ruleset
  if (ruleset >= 0) {
    if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) child_fail("landlock_restrict_self");
    close(ruleset);
  }
#endif
  if (filter_len > 0) {
    sock_fprog prog{uint16_t(filter_len), const_cast<sock_filter*>(filter)};
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) child_fail("seccomp");
  }
  execve(plan.argv[0], plan.argv.data(), plan.envp.data());
  child_fail("execve");
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::string sandbox_isolation() {
  const Probe& p = probe();
  std::string s;
  if (p.netns || p.userns) s += "netns ";
  if (p.landlock) s += "landlock-abi" + std::to_string(p.landlock) + " ";
  if (p.seccomp) s += "seccomp ";
  s += "rlimits";
  if (p.root) s += " nobody";
  if (p.userns) s += " userns";
  return s;
}

std::vector<std::string> missing_sandbox_layers() {
  const Probe& p = probe();
  std::vector<std::string> missing;
  if (!p.landlock) missing.push_back("landlock");
  if (!p.seccomp) missing.push_back("seccomp");
  if (!p.root && !p.userns) missing.push_back("unprivileged uid (user namespace)");
  return missing;
}

void require_sandbox(bool allow_weak) {
  std::vector<std::string> missing = missing_sandbox_layers();
  if (missing.empty() || allow_weak) return;
  std::string list;
  for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
  throw InputError::field("--allow-weak-sandbox", "the sandbox for untrusted programs lacks " + list +
                                                      " on this machine; refusing to run them (pass --allow-weak-sandbox to run anyway)");
}

SandboxResult run_sandboxed(const SandboxSpec& spec, const RequestHandler& handler) {
  if (spec.argv.empty() || spec.argv[0].empty() || spec.argv[0][0] != '/')
    throw std::invalid_argument("run_sandboxed: argv[0] must be an absolute path");
  if (!spec.allow_weak && !missing_sandbox_layers().empty())
    throw std::runtime_error("sandbox: a layer is missing (" + missing_sandbox_layers().front() + ") and a weak sandbox was not allowed");
  const Probe& pr = probe();
  if (pr.root && chown(spec.workdir.c_str(), kNobody, kNogroup) != 0)
    throw std::runtime_error("sandbox: cannot hand " + spec.workdir + " to nobody: " + strerror(errno));

  // Everything the child needs, prepared here: it must not allocate after fork.
  std::vector<std::string> argv = spec.argv, env = spec.env;
  ChildPlan plan;
  for (auto& a : argv) plan.argv.push_back(a.data());
  plan.argv.push_back(nullptr);
  for (auto& e : env) plan.envp.push_back(e.data());
  plan.envp.push_back(nullptr);
  plan.workdir = spec.workdir.c_str();
  for (const auto& p : spec.read_only_paths) plan.read_only.push_back(p.c_str());
  plan.limits = spec.limits;
  plan.probe = pr;

  int out_pipe[2], err_pipe[2], channel[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("sandbox: pipe failed");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    throw std::runtime_error("sandbox: pipe failed");
  }
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    throw std::runtime_error("sandbox: socketpair failed");
  }
  plan.out_fd = out_pipe[1];
  plan.err_fd = err_pipe[1];
  plan.channel_fd = channel[1];

  // The child's pid goes into its seccomp filter, so the filter is built in the child from
  // a template with a placeholder pid patched in by index (no allocation there).
  constexpr pid_t kPlaceholder = 0x7ffffff0;
  std::vector<sock_filter> filter = pr.seccomp ? seccomp_policy(kPlaceholder) : std::vector<sock_filter>{};
  std::vector<size_t> self_slots, neg_self_slots;
  for (size_t i = 0; i < filter.size(); ++i) {
    bool is_jump = BPF_CLASS(filter[i].code) == BPF_JMP;
    if (is_jump && filter[i].k == uint32_t(kPlaceholder)) self_slots.push_back(i);
    if (is_jump && filter[i].k == uint32_t(-kPlaceholder)) neg_self_slots.push_back(i);
  }

  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], channel[0], channel[1]}) close(fd);
    throw std::runtime_error("sandbox: fork failed");
  }
  if (pid == 0) {
    pid_t self = getpid();
    for (size_t i : self_slots) filter[i].k = uint32_t(self);
    for (size_t i : neg_self_slots) filter[i].k = uint32_t(-self);
    run_child(plan, filter.data(), filter.size());
  }
  // No setpgid here: the child's setsid makes its group, and would fail on a group leader.
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(channel[1]);

  SandboxResult result;
  std::string request;
  bool out_open = true, err_open = true, channel_open = true;
  bool killed = false;
  auto kill_group = [&] {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    killed = true;
  };
  char buf[65536];
  while (out_open || err_open) {
    double left = spec.limits.wall_s - seconds_since(t0);
    if (left <= 0 && !killed) {
      result.timed_out = true;
      kill_group();
    }
    pollfd fds[3];
    int n = 0;
    int out_i = -1, err_i = -1, ch_i = -1;
    if (out_open) { out_i = n; fds[n++] = {out_pipe[0], POLLIN, 0}; }
    if (err_open) { err_i = n; fds[n++] = {err_pipe[0], POLLIN, 0}; }
    if (channel_open) { ch_i = n; fds[n++] = {channel[0], POLLIN, 0}; }
    int timeout_ms = killed ? 1000 : int(std::max(1.0, left * 1000));
    int r = poll(fds, nfds_t(n), timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0 && killed) break;  // killed and silent: pipes held by nothing useful
    auto drain = [&](int idx, int fd, std::string& into, bool& open) {
      if (idx < 0 || !(fds[idx].revents & (POLLIN | POLLHUP | POLLERR))) return;
      ssize_t got = read(fd, buf, sizeof buf);
      if (got <= 0) {
        open = false;
        return;
      }
      size_t room = spec.limits.output_bytes > into.size() ? spec.limits.output_bytes - into.size() : 0;
      into.append(buf, std::min(room, size_t(got)));
      if (size_t(got) > room && !killed) {
        result.output_limit = true;
        kill_group();
      }
    };
    drain(out_i, out_pipe[0], result.out, out_open);
    drain(err_i, err_pipe[0], result.err, err_open);
    if (ch_i >= 0 && (fds[ch_i].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t got = read(channel[0], buf, sizeof buf);
      if (got <= 0) {
        channel_open = false;
      } else {
        request.append(buf, size_t(got));
        if (request.size() > spec.limits.output_bytes && !killed) {
          result.output_limit = true;
          kill_group();
        }
        size_t nl;
        while ((nl = request.find('\n')) != std::string::npos) {
          std::string line = request.substr(0, nl);
          request.erase(0, nl + 1);
          if (killed) break;
          std::optional<std::string> answer =
              handler ? handler(line, spec.limits.wall_s - seconds_since(t0)) : std::string("{\"error\":\"no handler\"}");
          if (!answer) {
            result.stopped = true;
            kill_group();
            break;
          }
          std::string reply = *answer + '\n';
          size_t sent = 0;
          while (sent < reply.size()) {
            ssize_t w = send(channel[0], reply.data() + sent, reply.size() - sent, MSG_NOSIGNAL);
            if (w <= 0) break;
            sent += size_t(w);
          }
        }
      }
    }
  }
  int status = 0;
  if (!killed) {
    // Output closed; the child should be exiting. Give it the rest of its time.
    while (true) {
      pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid) break;
      if (seconds_since(t0) > spec.limits.wall_s) {
        result.timed_out = true;
        kill_group();
        waitpid(pid, &status, 0);
        break;
      }
      usleep(1000);
    }
  } else {
    waitpid(pid, &status, 0);
  }
  kill(-pid, SIGKILL);  // anything left in the group (nothing, when fork is refused)
  for (int fd : {out_pipe[0], err_pipe[0], channel[0]}) close(fd);
  result.seconds = seconds_since(t0);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

}  // namespace trex::oreval
