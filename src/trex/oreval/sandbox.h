// Running untrusted code (a model's completion) in a contained child process.
//
// The child gets, in this order: a new session (setsid: its own process group and no
// controlling terminal); stdin from /dev/null and every other inherited descriptor closed
// (close_range, checked, with a fallback); a private working directory as cwd; an
// unprivileged identity: user nobody when trex runs as root, else a new user namespace in
// which its uid is unmapped; a new network namespace (no interface but a downed loopback);
// resource limits (CPU seconds, address space, file size, open files, no core dumps);
// no_new_privs; a Landlock ruleset (Linux >= 5.13) that lets it read and execute only the
// listed read-only paths and write only its working directory, from ABI 4 neither bind nor
// connect TCP, from ABI 6 signal nothing outside its domain; and a default-deny seccomp
// filter (seccomp_policy.h). The parent kills the whole group at the wall-clock limit or when
// the output cap is passed, and reads at most `output_bytes` of stdout and stderr each.
//
// Fail closed: when Landlock, seccomp or the unprivileged identity is unavailable,
// run_sandboxed refuses unless the spec allows a weak sandbox (`--allow-weak-sandbox`), and
// `trex eval` checks this once, before any item runs (require_sandbox).
//
// A request channel (a socketpair on the child's fd 3) lets the child ask the parent for
// work it may not do itself: the gurobipy-compatible module sends "solve" requests through
// it, and the parent answers with the result of a trex solver.
#pragma once

#include <functional>
#include <optional>
#include <sys/types.h>

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
  bool stopped = false;      // killed because the request handler said so
  std::string out, err;
  double seconds = 0;
};

// Called in the parent for each line the child writes to fd 3, with the seconds left of the
// child's wall clock (the handler must not take longer). The returned text (one line, no
// newline) is written back; nothing (std::nullopt) kills the child instead. It runs on the
// thread that called run_sandboxed.
using RequestHandler = std::function<std::optional<std::string>(const std::string& request, double seconds_left)>;

struct SandboxSpec {
  std::vector<std::string> argv;            // argv[0] is an absolute path
  std::vector<std::string> env;             // "NAME=value", the child's whole environment
  std::string workdir;                      // must exist; made the child's own (chown when root)
  // An open descriptor of workdir, or -1. When given, it is the folder handed to nobody (fchown):
  // workdir may name it only where the child runs (a warm interpreter's workspace, workspace.h).
  int workdir_fd = -1;
  std::vector<std::string> read_only_paths; // readable and executable by the child
  SandboxLimits limits;
  bool allow_weak = false;                  // run even when a layer is missing
};

// What this kernel and process allow, probed once: e.g. "netns landlock-abi7 seccomp nobody".
std::string sandbox_isolation();

// The required layers this machine lacks ("landlock", "seccomp", "unprivileged uid"); empty
// when the sandbox is whole.
std::vector<std::string> missing_sandbox_layers();

// Throws InputError naming the missing layers and --allow-weak-sandbox, unless none is
// missing or `allow_weak`. Called before any item runs.
void require_sandbox(bool allow_weak);

// Starts the contained child some other way than a fork and exec of this process: a warm
// interpreter forks it and it enters every layer itself (warm_pool.h). Whoever forked it is its
// parent; the pid stays the child's own until reap returns, so killing its group until then
// reaches nothing else.
class SandboxLauncher {
 public:
  virtual ~SandboxLauncher() = default;
  // Starts the child with the three descriptors as its stdout, stderr and fd 3 and every layer
  // of the spec in place before the program runs; returns its pid, which leads its own process
  // group. Throws std::runtime_error when it could not be started. The descriptors stay the
  // caller's to close (it closes them once, as after a fork).
  virtual pid_t launch(const SandboxSpec& spec, int out_fd, int err_fd, int channel_fd) = 0;
  // Once its output has closed or it was killed: waits up to `seconds_left` for it to exit,
  // then kills its group (setting `timed_out`); kills whatever is left in the group, reaps the
  // child and returns its wait status. Throws std::runtime_error when that cannot be known.
  // `meanwhile` (may be empty; must not throw) runs on the caller's thread once the wait has
  // been asked for and before its answer is awaited: work that overlaps the child's exit.
  virtual int reap(pid_t pid, double seconds_left, bool& timed_out, const std::function<void()>& meanwhile) = 0;
};

// Runs the child and waits for it. Throws std::runtime_error when the child could not be
// started (fork or pipe failure, or a missing layer without allow_weak); everything the child
// does is reported in the result. `launcher` (may be null: fork and exec here) starts it.
// `after_output` (may be empty) is called once, on this thread, when both output streams have
// ended and the child was not killed, before its exit status is known: the child may still be
// exiting (or, having closed its streams, still running), so what it reads of the child's files
// there is not final; it overlaps the wait for the exit. An exception it throws is dropped.
SandboxResult run_sandboxed(const SandboxSpec& spec, const RequestHandler& handler = {},
                            SandboxLauncher* launcher = nullptr, const std::function<void()>& after_output = {});

}  // namespace trex::oreval
