#include "trex/util/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <sstream>

#include "trex/util/error.h"

extern char** environ;

namespace trex {

namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

bool program_available(const std::string& program) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    std::string p = (dir.empty() ? "." : dir) + "/" + program;
    struct stat st;
    if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0)
      return true;
  }
  return false;
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty()) throw std::logic_error("run_process: empty argv");
  // A child that exits before reading its stdin must not kill trex with SIGPIPE.
  static const bool sigpipe_ignored = [] { return ::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();
  (void)sigpipe_ignored;
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) throw InputError(argv[0], 0, "pipe failed");
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw InputError(argv[0], 0, "pipe failed");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw InputError(argv[0], 0, "pipe failed");

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_USEVFORK);
  posix_spawnattr_setpgroup(&attr, 0);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    throw InputError(argv[0], 0, std::string("cannot start: ") + std::strerror(rc));
  }

  ProcessResult result;
  int fds[3] = {in_pipe[1], out_pipe[0], err_pipe[0]};
  for (int fd : fds) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  size_t written = 0;
  if (options.stdin_data.empty()) close_fd(fds[0]);

  auto deadline = start + std::chrono::duration<double>(options.timeout_s);
  char buf[1 << 16];
  while (fds[1] >= 0 || fds[2] >= 0) {
    int wait_ms = -1;
    if (options.timeout_s > 0) {
      auto left = deadline - std::chrono::steady_clock::now();
      wait_ms = int(std::chrono::duration_cast<std::chrono::milliseconds>(left).count());
      if (wait_ms <= 0) {
        ::kill(-pid, SIGKILL);
        result.timed_out = true;
        break;
      }
    }
    pollfd pfd[3];
    int n = 0;
    int which[3];
    for (int i = 0; i < 3; ++i) {
      if (fds[i] < 0) continue;
      pfd[n].fd = fds[i];
      pfd[n].events = i == 0 ? POLLOUT : POLLIN;
      pfd[n].revents = 0;
      which[n++] = i;
    }
    int r = ::poll(pfd, nfds_t(n), wait_ms);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int k = 0; k < n; ++k) {
      int i = which[k];
      if (!pfd[k].revents) continue;
      if (i == 0) {
        ssize_t w = ::write(fds[0], options.stdin_data.data() + written,
                            options.stdin_data.size() - written);
        if (w > 0) written += size_t(w);
        if (w < 0 && errno != EAGAIN && errno != EINTR) close_fd(fds[0]);
        if (written >= options.stdin_data.size()) close_fd(fds[0]);
        continue;
      }
      ssize_t got = ::read(fds[i], buf, sizeof buf);
      if (got > 0) {
        std::string& dst = i == 1 ? result.out : result.err;
        size_t keep = std::min(size_t(got), options.max_output - std::min(options.max_output, dst.size()));
        dst.append(buf, keep);
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        close_fd(fds[i]);
      }
    }
  }
  for (int& fd : fds) close_fd(fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // Anything the child left running in its group goes too.
  ::kill(-pid, SIGKILL);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFSIGNALED(status)) {
    result.signaled = true;
    result.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

BackgroundProcess start_background(const std::vector<std::string>& argv) {
  if (argv.empty()) throw std::logic_error("start_background: empty argv");
  int out_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw InputError(argv[0], 0, "pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    throw InputError(argv[0], 0, std::string("cannot start: ") + std::strerror(rc));
  }
  return {int(pid), out_pipe[0]};
}

std::string read_line(int fd) {
  std::string line;
  char ch;
  while (::read(fd, &ch, 1) == 1 && ch != '\n') line += ch;
  return line;
}

int stop_background(BackgroundProcess& p, int signal) {
  if (p.pid <= 0) return -1;
  ::kill(p.pid, signal);
  int status = 0;
  ::waitpid(p.pid, &status, 0);
  if (p.out >= 0) ::close(p.out);
  p.pid = -1;
  p.out = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace trex
