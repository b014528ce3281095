// The child's side of the sandbox: the probe of what this kernel and process allow, and the
// layers a contained child puts on itself before the program runs (sandbox.h lists them, in
// order). Shared by the two ways a child starts: a fork of trex that then executes the
// interpreter (run_sandboxed), and a fork of a warm interpreter that runs the program in
// place (warm_pool.h), which reaches enter_sandbox through sandbox_enter.cc's C entry points.
#pragma once

#include <linux/filter.h>
#include <stddef.h>
#include <sys/types.h>

#include <vector>

#include "trex/oreval/sandbox.h"

namespace trex::oreval {

constexpr uid_t kSandboxNobody = 65534;
constexpr gid_t kSandboxNogroup = 65534;

struct SandboxProbe {
  int landlock = 0;     // the Landlock ABI, 0 when absent
  bool root = false;
  bool netns = false;   // root: a network namespace of its own
  bool userns = false;  // not root: a user namespace (unmapped uid) with a network namespace
  bool seccomp = false;
};

// Probed once per process (the first call forks a throwaway child).
const SandboxProbe& sandbox_probe();

// The layers this probe lacks, by name; empty when the sandbox is whole.
std::vector<const char*> missing_layers(const SandboxProbe& p);

// Everything the child needs, prepared before fork: between fork and exec it must not allocate.
struct ChildPlan {
  const char* workdir = nullptr;
  std::vector<const char*> read_only;
  SandboxLimits limits;
  int out_fd = -1, err_fd = -1, channel_fd = -1;
  SandboxProbe probe;
  // sandbox_prepare already ran in this child (a warm interpreter's child forked ahead of its
  // request): its session and namespaces are made, enter_sandbox does not make them again.
  bool prepared = false;
};

// The layers that do not depend on the program's request, for a child forked ahead of it: a
// new session, and the network namespace (root) or the user and network namespaces with every
// capability dropped (not root), as the probe found them. Each such child makes its own, except
// the network namespace of a warm interpreter that shares one (sandbox_share_network_namespace).
// Returns 0, or the errno of the step that failed with *what naming it (the caller must then run
// nothing: it reports the failure as enter_sandbox would and exits 126). Raw system calls only.
int sandbox_prepare(const SandboxProbe& probe, const char** what);

// For a warm interpreter, once, before it forks any child: where the probe found root, a network
// namespace and seccomp, the interpreter moves itself into a new network namespace, and every
// child it forks stays in that one instead of making its own (sandbox_prepare and enter_sandbox
// then skip the unshare, about 1 ms of CPU per program with the kernel's teardown). Its
// programs run one at a time, and none can create or change anything in it: the seccomp filter
// refuses socket() and socketpair() for every family, and user nobody holds no capability
// (docs/eval.md, "Isolation"). The one socket a program holds, fd 3 (the solve channel), is
// trex's, made in the evaluator's network namespace: the filter refuses every socket ioctl
// (type 0x89: SIOCGIFCONF and the like), which would read that namespace's interfaces. Returns 1 when it moved, 0 when each child still makes its own
// (not root, no seccomp, or the unshare failed). Never called by trex itself: the fresh path's
// children always make their own.
int sandbox_share_network_namespace(const SandboxProbe& probe);

// sandbox_probe() and then sandbox_share_network_namespace(), for a warm interpreter before
// anything else probed: where it runs as root with seccomp, it moves into the new network
// namespace first, and that unshare is the probe's answer for the network namespace (it could
// make one) instead of a throwaway child's: one fork, unshare and wait less in every
// interpreter's start (1.5-4 ms of its wall, session 30). Where that unshare fails, or the probe
// already ran, it probes as sandbox_probe() does (the throwaway child finds the same refusal:
// no network namespace, so the interpreter's isolation differs from the evaluator's and no
// program runs there). Returns what sandbox_share_network_namespace returns.
int sandbox_probe_in_shared_network_namespace();

// Whether this process (or the interpreter it was forked from) moved into a shared network
// namespace with sandbox_share_network_namespace.
bool sandbox_network_namespace_shared();

// In the child: new session, stdin /dev/null, stdout/stderr/fd 3 from the plan, every other
// descriptor closed, the working directory, the Landlock ruleset, rlimits, the unprivileged
// identity and network namespace (unless plan.prepared: sandbox_prepare made the session and
// the namespaces), no_new_privs, Landlock enforced, the seccomp filter. Returns
// only when every step succeeded; on any failure it writes "trex sandbox: STEP: ERROR" to fd 2
// and exits with status 126 (fail closed). Raw system calls only, no allocation.
void enter_sandbox(const ChildPlan& plan, const sock_filter* filter, size_t filter_len);

// "trex sandbox: WHAT: strerror(errno)" on fd 2, then _exit(126).
[[noreturn]] void sandbox_child_fail(const char* what);

}  // namespace trex::oreval
