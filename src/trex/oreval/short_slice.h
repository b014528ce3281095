// A short scheduling slice for the warm path's processes (issue 19), where the kernel has them
// (Linux 6.12's EEVDF custom slices: sched_setattr's sched_runtime for SCHED_OTHER).
//
// A warm program passes between three processes (the evaluator, the warm interpreter, the
// program's child) several times: the request, {"pid": N}, the child's output closing,
// {"wait"}, {"status"}. Each pass wakes a process that has only microseconds to run. On a
// machine that runs other work (a build beside the evaluation), EEVDF lets the task on the
// woken one's CPU finish its slice first (RUN_TO_PARITY), unless the woken task asked for a
// shorter slice than that task's (PREEMPT_SHORT): whatever its nice value, it then waited up
// to a tick (4 ms here) per pass. perf sched, session 28, one 99-program run at load ~9 in
// the nice -20 lane: the warm interpreter waited 151 ms in all for a CPU after its wake-ups,
// the evaluator 238 ms; with 0.1 ms slices 5 and 41 ms. The slice changes no share of the CPU
// (weights are nice's), only how soon a woken task runs and how long it runs before the
// scheduler looks again: with nothing else runnable it changes nothing.
#pragma once

#include <sys/types.h>

namespace trex::oreval {

// The slice asked for: the kernel's smallest (it clamps custom slices to 0.1-100 ms).
constexpr unsigned long long kShortSliceNs = 100'000;

// Gives the thread `tid` (0: the calling one) a kShortSliceNs slice, keeping its policy and
// nice value; threads and processes it creates later inherit it (fork keeps a task's slice
// unless it is SCHED_RESET_ON_FORK). Only a SCHED_OTHER thread is changed. Whether the
// kernel now reports that slice for it: false where it keeps no custom slice for SCHED_OTHER
// (before 6.12 the field is ignored), refused, or $TREX_SHORT_SLICE is "0" (then nothing is
// asked). Never throws; the slice is only a latency hint, nothing depends on it.
bool request_short_slice(pid_t tid);

}  // namespace trex::oreval
