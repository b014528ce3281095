// Running another program and collecting what it printed.
//
// Used where trex drives a separate process on purpose: a GPL solver kept out of the
// address space (glpsol), or the trex binary itself in tests. The child gets its own
// process group, so a timeout kills it and everything it started.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace trex {

struct ProcessOptions {
  std::string stdin_data;        // written to the child's stdin, then closed
  double timeout_s = 0;          // 0: no limit; else SIGKILL to the group after this long
  std::string cwd;               // empty: inherit
  size_t max_output = 64 << 20;  // bytes kept per stream; the rest is drained and dropped
};

struct ProcessResult {
  int exit_code = -1;  // valid when !signaled
  bool signaled = false;
  int signal = 0;
  bool timed_out = false;
  std::string out;
  std::string err;
  double seconds = 0;
};

// argv[0] is looked up in PATH. Throws InputError when the program cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// A program left running in the background with its stdout on a pipe (stdin and stderr are
// trex's): for a server that says on its first line where it listens. The caller reads `out`,
// then stops and reaps `pid` (stop_background).
struct BackgroundProcess {
  int pid = -1;
  int out = -1;  // read end of the child's stdout
};
// argv[0] is looked up in PATH. Throws InputError when the program cannot be started.
BackgroundProcess start_background(const std::vector<std::string>& argv);
// One line from `fd` without its '\n' ("" at end of file).
std::string read_line(int fd);
// Sends `signal`, waits for the exit and closes `out`; returns the exit code (128 + the signal
// when killed by one). A no-op returning -1 when nothing runs.
int stop_background(BackgroundProcess& p, int signal);

// True when `program` can be found in PATH (or is an executable path).
bool program_available(const std::string& program);

}  // namespace trex
