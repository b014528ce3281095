// Solving a model that untrusted code built, never in the evaluator's own process.
//
// A model from a completion can be hostile: millions of variables, coefficients that make a
// solver misbehave, a shape that runs it out of memory or into a bug. So it is parsed and
// solved in a helper program of its own, trex-solve-helper (apps/solve_helper), exec'd per
// solve with posix_spawn: nothing of the evaluator runs in the new process before the exec, so
// no lock that one of the evaluator's threads held at that moment (an allocator's, a stream's,
// a static's initialisation guard) can stall it. (Until session 13 the helper was a fork of
// the multi-threaded evaluator running the parse and the solve without exec, and hung now and
// then in such a lock: a correct program then scored "timeout".)
//
// The helper gets the model's bytes on stdin (a memfd the evaluator filled: no pipe to write
// while the helper reads), its reply goes to a pipe and stderr to /dev/null; its environment is
// trex's with OpenBLAS on one thread. First thing, before
// it reads a byte, it closes every other descriptor it inherited, limits its address space (its
// size at start plus `memory_bytes`), CPU time (what is left of the deadline plus the grace, rounded up, plus one second) and
// core size, drops to user nobody when started as root and sets no_new_privs; then it parses
// and solves. The deadline is one absolute CLOCK_MONOTONIC time, computed before the spawn and
// passed to the helper (both processes read the same clock), so the helper's start-up counts
// against it; the solver's limit is what is left of it less a margin (10% of what is left, at
// most 0.25 s) for the solver's overshoot and the reply. The evaluator waits a grace period past
// the deadline (solve_helper_grace_s) before it kills the helper, so a solve that ran to its
// limit still delivers its best solution; it reads at most a bounded reply. The program is
// $TREX_SOLVE_HELPER, else trex-solve-helper beside the running binary, else the one the build
// made (its path compiled in: a trex copied elsewhere must not run a stale build tree's
// helper); none of them there: the solve fails with kError saying so.
#pragma once

#include <string>

#include "trex/lp/model.h"
#include "trex/lp/solver.h"

namespace trex::oreval {

// What the helper parses: a gurobipy-compatible module's record (model_json.h) or a model the
// evaluator holds, sent exactly (model_wire.h).
struct HelperInput {
  enum class Kind { kRecord, kModel };
  Kind kind = Kind::kModel;
  std::string bytes;
  std::string file;  // named in a parse error's message

  static HelperInput record(std::string text, std::string file);
  static HelperInput model(const lp::Model& m);
};

struct HelperLimits {
  double seconds_left = 60;               // the one deadline, from the call: solver limit and the kill
  size_t memory_bytes = size_t(2) << 30;  // address space the helper may add to its size at start
  std::string program;                    // the helper program; empty: solve_helper_program()
};

// Who answered: the helper's process as it reported itself (tests check it is not the caller).
struct HelperProcess {
  long pid = 0;
  long uid = -1;
  std::string exe;  // basename of its /proc/self/exe
};

// How long past the deadline the evaluator waits for the helper's answer before it kills it,
// and what the helper's CPU limit allows beyond the deadline.
inline double solve_helper_grace_s(double seconds) { return 0.5 + 0.05 * (seconds > 0 ? seconds : 0); }

// The helper program to exec, or "" when none is found; `why` then says where it looked.
std::string solve_helper_program(std::string* why = nullptr);

// Solves `input` with `solver` in the helper, the time limit being what is left of the
// deadline. Never throws: a parse error, a crash, a missing helper program, a failed spawn step
// or memory running out come back as kError, a helper that has not answered a grace period past
// the deadline is killed and comes back as kTimeLimitNoSolution, each with a message; no
// descriptor or child process is left behind on any path.
lp::SolveResult solve_in_helper(const HelperInput& input, const std::string& solver, const HelperLimits& limits,
                                HelperProcess* who = nullptr);

}  // namespace trex::oreval
