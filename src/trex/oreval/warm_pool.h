// Warm interpreters for Python completions (issue 19): per worker, one /usr/bin/python3 with
// trex's runner and modelling modules already imported (python/trex_eval_zygote.py), which
// forks one child per program instead of a fresh interpreter starting each time.
//
// The isolation is the fresh path's: the forked child applies the same layers with the same
// checks (sandbox_child.h's enter_sandbox, loaded from the shared library trex_sandbox_enter),
// before anything of the program runs, and exits 126 when one fails; the session and the
// network (or user) namespace, which do not depend on the request, it makes while it waits
// for the request (sandbox_prepare), the rest in the fresh path's order. As root with
// seccomp, the network namespace is the interpreter's, made once for all its children
// (sandbox_share_network_namespace; why that isolates as well, in docs/eval.md). The evaluator keeps the wall clock, the output caps and the solve channel
// (run_sandboxed). What differs: the module is imported from one read-only copy per
// interpreter (in a folder of its own, outside every program's folder) rather than from a copy
// in each program's folder, and children of one interpreter share its address-space layout.
//
// An interpreter is used by one worker at a time; the pool starts one when every started one
// is busy and keeps it until the process ends (it exits when its control socket closes).
#pragma once

#include <memory>
#include <string>

#include "trex/oreval/sandbox.h"

namespace trex::oreval {

class WarmInterpreter;

// The shared library holding the child's side of the sandbox: $TREX_SANDBOX_ENTER_LIB, else
// the one the build made, else libtrex_sandbox_enter.so beside the trex binary. Throws
// InputError when none exists.
std::string sandbox_enter_library();

// An idle interpreter for (python, pydir), started if none is idle (seconds: it imports the
// module once). Throws std::runtime_error when it cannot start or its sandbox probe differs
// from this process's (fail closed). Given back to the pool when the lease ends, unless it broke.
class WarmLease {
 public:
  WarmLease(const std::string& python, const std::string& pydir);
  ~WarmLease();
  WarmLease(const WarmLease&) = delete;
  WarmLease& operator=(const WarmLease&) = delete;
  SandboxLauncher* launcher();
  // The runner in the interpreter's module copy (argv[3] of the fresh path's command line).
  const std::string& runner() const;
  // The folder holding that copy: the child must be allowed to read it.
  const std::string& module_dir() const;
  // The interpreter's workspace (workspace.h): the tmpfs mount's descriptor, in which the caller
  // makes each program's folder, and the path at which the interpreter's children see that
  // mount (the folder NAME made there is workspace_dir() + "/NAME" to them, and on no path of
  // the caller's). -1 where it has none: the program's folder goes under $TMPDIR.
  int workspace_fd() const;
  const std::string& workspace_dir() const;

 private:
  std::string key_;
  std::unique_ptr<WarmInterpreter> interp_;
};

// Starts an interpreter for (python, pydir) and leaves it idle in the pool without waiting for
// it: its start (python's, the imports, the warm-up: tens of milliseconds) then overlaps what
// the caller does next, until the first lease, which waits for its "ready" and checks it as it
// checks one it starts itself. Does nothing when the pool already holds an idle one for the
// pair. Never throws: when the start fails, the first lease starts one and reports why. One
// that is never leased is stopped at exit like any idle one when it has sent its "ready", and
// killed, not waited for, when it has not.
void warm_pool_prestart(const std::string& python, const std::string& pydir);

// Tells every idle interpreter to exit, without waiting for any: their exits (each stops its
// waiting child, reaps it and tears its address space down, ~1-2 ms) then overlap what the caller
// does next, such as writing the run's report; they are waited for and their folders removed at
// exit, as before. Leased ones are left alone; a later lease starts a new interpreter.
void warm_pool_release_idle();

// Started interpreters (idle or leased) in this process, for tests.
int warm_interpreters_started();

// Where the programs of this process's warm interpreters got their folders, for the run's
// report (report.h RunInfo): in each interpreter's workspace, under $TMPDIR and why (no
// workspace could be made, or TREX_WORKSPACE=0), or both with how many interpreters each; under
// $TMPDIR where no warm interpreter became ready (--cold-start, no Python program).
std::string warm_program_folders();

// How many workers lease interpreters at once in this process (evaluate's --jobs), set before
// the first interpreter starts (the interpreters started later read it); 0, the default: not
// known.
void warm_pool_set_workers(int workers);

// Whether an interpreter forks each next program's child while the current program runs rather
// than after its status (python/trex_eval_zygote.py FORK_EARLY): where every one of `workers`
// has a CPU beside it that it leaves idle (at least two of `cpus` per worker), which the fork,
// the copies ahead and the first layers then use: less wall per program, and more CPU (two
// processes at once on this project's machine cost more CPU than one after the other:
// docs/eval.md). Not with `workers` unknown (0).
bool warm_fork_early(int workers, int cpus);

}  // namespace trex::oreval
