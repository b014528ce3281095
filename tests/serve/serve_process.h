// A `trex serve` process for tests that talk to it over real HTTP: started in the background
// (util/subprocess.h), the first line (where it listens) read, stopped with SIGTERM.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "trex/util/subprocess.h"

namespace trex::test_util {

using ServeProcess = BackgroundProcess;

// Started, with the first line it printed (where it listens) in *line.
inline ServeProcess spawn_server(const std::vector<std::string>& args, std::string* line) {
  ServeProcess c = start_background(args);
  *line = read_line(c.out);
  return c;
}

// The port named in the listening line, or -1.
inline int port_of(const std::string& line) {
  const size_t at = line.find("http://127.0.0.1:");
  return at == std::string::npos ? -1 : std::stoi(line.substr(at + 17));
}

// The exit code (128 + signal when killed), or -1 after `seconds` (then it is killed). The
// limit is a hang guard only.
inline int wait_exit(int pid, int seconds) {
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
inline int stop_server(ServeProcess& c) { return stop_background(c, SIGTERM); }

}  // namespace trex::test_util
