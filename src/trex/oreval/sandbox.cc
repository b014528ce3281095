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

#include "trex/oreval/sandbox_child.h"
#include "trex/oreval/seccomp_policy.h"
#include "trex/util/error.h"

namespace trex::oreval {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::vector<std::string> missing_sandbox_layers() {
  std::vector<std::string> missing;
  for (const char* m : missing_layers(sandbox_probe())) missing.emplace_back(m);
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

SandboxResult run_sandboxed(const SandboxSpec& spec, const RequestHandler& handler, SandboxLauncher* launcher,
                            const std::function<void()>& after_output) {
  if (spec.argv.empty() || spec.argv[0].empty() || spec.argv[0][0] != '/')
    throw std::invalid_argument("run_sandboxed: argv[0] must be an absolute path");
  if (!spec.allow_weak && !missing_sandbox_layers().empty())
    throw std::runtime_error("sandbox: a layer is missing (" + missing_sandbox_layers().front() + ") and a weak sandbox was not allowed");
  const SandboxProbe& pr = sandbox_probe();
  if (pr.root && (spec.workdir_fd >= 0 ? fchown(spec.workdir_fd, kSandboxNobody, kSandboxNogroup)
                                        : chown(spec.workdir.c_str(), kSandboxNobody, kSandboxNogroup)) != 0)
    throw std::runtime_error("sandbox: cannot hand " + spec.workdir + " to nobody: " + strerror(errno));

  // Everything the child needs, prepared here: it must not allocate after fork.
  std::vector<std::string> argv = spec.argv, env = spec.env;
  std::vector<char*> argv_p, envp;
  for (auto& a : argv) argv_p.push_back(a.data());
  argv_p.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  ChildPlan plan;
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
  // A warm interpreter's child builds its own filter (sandbox_enter.cc), so none is made here then.
  std::vector<sock_filter> filter = pr.seccomp && !launcher ? seccomp_policy(kPlaceholder) : std::vector<sock_filter>{};
  std::vector<size_t> self_slots, neg_self_slots;
  for (size_t i = 0; i < filter.size(); ++i) {
    bool is_jump = BPF_CLASS(filter[i].code) == BPF_JMP;
    if (is_jump && filter[i].k == uint32_t(kPlaceholder)) self_slots.push_back(i);
    if (is_jump && filter[i].k == uint32_t(-kPlaceholder)) neg_self_slots.push_back(i);
  }

  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = -1;
  if (launcher) {
    // A warm interpreter forks the child and it enters the same layers there (warm_pool.h).
    try {
      pid = launcher->launch(spec, out_pipe[1], err_pipe[1], channel[1]);
    } catch (...) {
      for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], channel[0], channel[1]}) close(fd);
      throw;
    }
  } else {
    pid = fork();
    if (pid < 0) {
      for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], channel[0], channel[1]}) close(fd);
      throw std::runtime_error("sandbox: fork failed");
    }
    if (pid == 0) {
      pid_t self = getpid();
      for (size_t i : self_slots) filter[i].k = uint32_t(self);
      for (size_t i : neg_self_slots) filter[i].k = uint32_t(-self);
      enter_sandbox(plan, filter.data(), filter.size());
      execve(argv_p[0], argv_p.data(), envp.data());
      sandbox_child_fail("execve");
    }
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
  // Never throws: the launcher's protocol must go on to the status whatever the caller's work did.
  std::function<void()> meanwhile;
  if (after_output && !killed) meanwhile = [&after_output] {
    try {
      after_output();
    } catch (...) {
    }
  };
  if (launcher) {
    // The warm interpreter is the child's parent: it waits for the rest of the wall clock, kills
    // the group while its leader still holds the pid, then reaps it.
    bool late = false;
    status = launcher->reap(pid, killed ? 5.0 : spec.limits.wall_s - seconds_since(t0), late, meanwhile);
    if (late && !killed) result.timed_out = true;
    for (int fd : {out_pipe[0], err_pipe[0], channel[0]}) close(fd);
    result.seconds = seconds_since(t0);
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
    return result;
  }
  if (!killed) {
    // Output closed; the child should be exiting. Give it the rest of its time.
    if (meanwhile) meanwhile();
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
