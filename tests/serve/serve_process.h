// A `trex serve` process for tests that talk to it over real HTTP: started with its stdout on a
// pipe, the first line (where it listens) read, stopped with SIGTERM or SIGKILL.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace trex::test_util {

struct ServeProcess {
  pid_t pid = -1;
  int out = -1;
  std::string line;  // the first line it printed
};

inline ServeProcess spawn_server(std::vector<std::string> args) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ServeProcess c;
  EXPECT_EQ(posix_spawn(&c.pid, argv[0], &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  c.out = fds[0];
  char ch;
  while (read(c.out, &ch, 1) == 1 && ch != '\n') c.line += ch;
  return c;
}

// The port named in the listening line, or -1.
inline int port_of(const std::string& line) {
  const size_t at = line.find("http://127.0.0.1:");
  return at == std::string::npos ? -1 : std::stoi(line.substr(at + 17));
}

// The exit code (128 + signal when killed), or -1 after `seconds` (then it is killed). The
// limit is a hang guard only.
inline int wait_exit(pid_t pid, int seconds) {
  for (int i = 0; i < seconds * 100; ++i) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// SIGTERM (the server drains and exits 0), then the exit code.
inline int stop_server(ServeProcess& c) {
  kill(c.pid, SIGTERM);
  const int code = wait_exit(c.pid, 300);
  close(c.out);
  return code;
}

}  // namespace trex::test_util
