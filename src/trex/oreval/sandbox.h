// Running untrusted code (a model's completion) in a contained child process.
//
// The child gets, in this order: its own process group; a private working directory as cwd;
// a new network namespace when the kernel allows it (no interface but a downed loopback);
// resource limits (CPU seconds, address space, file size, open files, no core dumps); when
// trex runs as root, the unprivileged user nobody and a process limit for that user;
// no_new_privs; a Landlock ruleset (Linux >= 5.13) that lets it read and execute only the
// listed read-only paths and write only its working directory, and, from Landlock ABI 4,
// neither bind nor connect TCP; and a seccomp filter (x86-64) that refuses fork, vfork, clone
// without CLONE_THREAD (so no new processes, while threads still work), socket creation,
// signals to other processes, raising resource limits, and ptrace/mount/namespace/module
// calls. The parent kills the whole group at the wall-clock limit or when the output cap is
// passed, and reads at most `output_bytes` of stdout and stderr each.
//
// A request channel (a socketpair on the child's fd 3) lets the child ask the parent for
// work it may not do itself: the gurobipy-compatible module sends "solve" requests through
// it, and the parent answers with the result of a trex solver.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace trex::oreval {

struct SandboxLimits {
  double wall_s = 20;                         // SIGKILL to the group after this long
  int cpu_s = 20;                             // RLIMIT_CPU
  size_t memory_bytes = size_t(2) << 30;      // RLIMIT_AS
  size_t file_bytes = size_t(64) << 20;       // RLIMIT_FSIZE: largest file it may write
  size_t output_bytes = size_t(1) << 20;      // kept per stream; passing it kills the child
  int open_files = 64;                        // RLIMIT_NOFILE
};

struct SandboxResult {
  int exit_code = -1;        // when neither signaled nor killed by the parent
  int signal = 0;            // the signal that ended it, 0 if it exited
  bool timed_out = false;    // killed at the wall-clock limit
  bool output_limit = false; // killed for printing more than output_bytes
  std::string out, err;
  double seconds = 0;
};

// Called in the parent for each line the child writes to fd 3; the returned text (one line,
// no newline) is written back. It runs on the thread that called run_sandboxed.
using RequestHandler = std::function<std::string(const std::string& request)>;

struct SandboxSpec {
  std::vector<std::string> argv;            // argv[0] is an absolute path
  std::vector<std::string> env;             // "NAME=value", the child's whole environment
  std::string workdir;                      // must exist; made the child's own (chown when root)
  std::vector<std::string> read_only_paths; // readable and executable by the child
  SandboxLimits limits;
};

// What this kernel and process allow, probed once: e.g. "netns landlock-abi7 seccomp nobody".
std::string sandbox_isolation();

// Runs the child and waits for it. Throws std::runtime_error when the child could not be
// started (fork or pipe failure); everything the child does is reported in the result.
SandboxResult run_sandboxed(const SandboxSpec& spec, const RequestHandler& handler = {});

}  // namespace trex::oreval
