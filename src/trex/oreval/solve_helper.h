// Solving a model that untrusted code built, never in the evaluator's own process.
//
// A model from a completion can be hostile: millions of variables, coefficients that make a
// solver misbehave, a shape that runs it out of memory or into a bug. So it is loaded and
// solved in a helper forked from the evaluator, which closes every inherited descriptor but
// its result pipe (and the sandbox folder, to read from), drops to user nobody when trex runs
// as root, sets no_new_privs and limits its memory and CPU time. The evaluator waits at most
// until `seconds_left` has passed, kills the helper then, and reads at most a bounded reply.
//
// The helper is forked without exec from a process that may run other threads; a lock one of
// them held at fork time could stall it, which the deadline turns into a time-limit status.
#pragma once

#include <functional>
#include <string>

#include "trex/lp/model.h"
#include "trex/lp/solver.h"

namespace trex::oreval {

struct HelperLimits {
  double seconds_left = 60;               // the one deadline: solver limit and the kill
  size_t memory_bytes = size_t(2) << 30;  // address space the helper may add to what it inherits
  int dir_fd = -1;                        // kept open for `load` (the sandbox folder), or -1
};

// Runs `load` in the helper (reading and parsing what a program left happens there too), then
// solves the model with `solver`, the time limit being what is left of the deadline. Never
// throws for what the model or helper does: a load error, a crash or the deadline come back
// as kError or kTimeLimitNoSolution with a message.
lp::SolveResult solve_in_helper(const std::function<lp::Model()>& load, const std::string& solver,
                                const HelperLimits& limits);

}  // namespace trex::oreval
