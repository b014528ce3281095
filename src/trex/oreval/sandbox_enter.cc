// C entry points into the child's side of the sandbox, for the warm interpreter
// (python/trex_eval_zygote.py loads them with ctypes from the shared library
// trex_sandbox_enter, which CMakeLists.txt builds from this file, sandbox_child.cc,
// close_fds.cc and seccomp_policy.cc). The forked child calls trex_sandbox_enter before it runs
// anything of the program; the layers, their order and their checks are enter_sandbox's, the
// same code run_sandboxed's forked child runs before it executes the interpreter.
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "trex/oreval/sandbox_child.h"
#include "trex/oreval/seccomp_policy.h"
#include "trex/oreval/workspace.h"

namespace {

// Copies `s` into the caller's `buf` of `len` bytes, cut to fit and NUL-terminated.
void copy_to_buffer(const std::string& s, char* buf, int len) {
  if (len <= 0) return;
  size_t n = std::min(s.size(), size_t(len - 1));
  memcpy(buf, s.data(), n);
  buf[n] = 0;
}

// A failed step: "STEP: ERROR" into `buf`, and the -1 the entry points return.
int step_failed(const char* what, int err, char* buf, int len) {
  copy_to_buffer(std::string(what) + ": " + strerror(err), buf, len);
  return -1;
}

}  // namespace

extern "C" {

// Probes the sandbox once in this process (before any child is forked, so every child inherits
// the answer) and writes what it found, in sandbox_isolation()'s words (one definition, in
// sandbox_child.cc), into `buf`. Returns the number of missing layers.
__attribute__((visibility("default"))) int trex_sandbox_probe(char* buf, int len) {
  using namespace trex::oreval;
  copy_to_buffer(sandbox_isolation(), buf, len);
  return int(missing_layers(sandbox_probe()).size());
}

// In the warm interpreter, after the probe and before its first fork: moves it into a network
// namespace that its children share (sandbox_share_network_namespace: root, a network namespace
// and seccomp). Returns 1 when it did, 0 when each child makes its own.
__attribute__((visibility("default"))) int trex_sandbox_share_netns() {
  using namespace trex::oreval;
  return sandbox_share_network_namespace(sandbox_probe());
}

// In the warm interpreter, first, in place of the two above (sandbox_probe_in_shared_network_
// namespace): where it runs as root with seccomp it moves into the network namespace its
// children share, and that move answers the probe's network-namespace question, with no
// throwaway child. Returns what trex_sandbox_probe returns, the isolation in `buf`, and in
// *shared what trex_sandbox_share_netns returns.
__attribute__((visibility("default"))) int trex_sandbox_probe_in_shared_netns(char* buf, int len, int* shared) {
  using namespace trex::oreval;
  *shared = sandbox_probe_in_shared_network_namespace();
  copy_to_buffer(sandbox_isolation(), buf, len);
  return int(missing_layers(sandbox_probe()).size());
}

// In the warm interpreter, before its first fork, while it runs one thread: moves it into a
// mount namespace of its own and attaches the evaluator's workspace tmpfs (the descriptor
// `mount_fd`) at the folder `path` (workspace.h's attach_workspace), where its children then
// find their folders. Returns 0, or -1 with "STEP: ERROR" in `buf`: the bootstrap (kBootstrap
// in warm_pool.cc) then reports that line and exits 125, fail closed, and the evaluator runs no
// program in it (each item it was to run fails with that line); nothing falls back to $TMPDIR
// here. The caller closes `mount_fd`.
__attribute__((visibility("default"))) int trex_sandbox_attach_workspace(int mount_fd, const char* path, char* buf,
                                                                         int len) {
  using namespace trex::oreval;
  const char* what = "";
  int err = attach_workspace(mount_fd, path, &what);
  return err == 0 ? 0 : step_failed(what, err, buf, len);
}

// In a child forked ahead of its request (trex_eval_zygote.py's WaitingChild): the layers that
// do not depend on the request (sandbox_prepare: a new session, a network namespace of its
// own). Returns 0, or -1 with "STEP: ERROR" in `buf`; then the child must run nothing, and
// reports `buf` as enter_sandbox reports a failed step (exit 126) once it has its stderr.
__attribute__((visibility("default"))) int trex_sandbox_prepare(char* buf, int len) {
  using namespace trex::oreval;
  const char* what = "";
  int err = sandbox_prepare(sandbox_probe(), &what);
  return err == 0 ? 0 : step_failed(what, err, buf, len);
}

// In the freshly forked child of a single-threaded interpreter (so it may allocate): applies
// every layer and returns 0, or writes why to fd 2 and exits with status 126. A missing layer
// is refused here too unless `allow_weak`, whatever the parent checked. `prepared`: this child
// ran trex_sandbox_prepare successfully (its session and namespaces are made).
__attribute__((visibility("default"))) int trex_sandbox_enter(const char* workdir, const char* const* read_only,
                                                              int n_read_only, int cpu_s, uint64_t memory_bytes,
                                                              uint64_t file_bytes, int open_files, int out_fd,
                                                              int err_fd, int channel_fd, int allow_weak,
                                                              int prepared) {
  using namespace trex::oreval;
  ChildPlan plan;
  plan.probe = sandbox_probe();
  if (!allow_weak && !missing_layers(plan.probe).empty()) {
    errno = EPERM;
    sandbox_child_fail(missing_layers(plan.probe).front());
  }
  plan.workdir = workdir;
  for (int i = 0; i < n_read_only; ++i) plan.read_only.push_back(read_only[i]);
  plan.limits.cpu_s = cpu_s;
  plan.limits.memory_bytes = size_t(memory_bytes);
  plan.limits.file_bytes = size_t(file_bytes);
  plan.limits.open_files = open_files;
  plan.out_fd = out_fd;
  plan.err_fd = err_fd;
  plan.channel_fd = channel_fd;
  plan.prepared = prepared != 0;
  std::vector<sock_filter> filter = plan.probe.seccomp ? seccomp_policy(getpid()) : std::vector<sock_filter>{};
  enter_sandbox(plan, filter.data(), filter.size());
  return 0;
}

}  // extern "C"
