// The CPU time this process has used, all its threads together.
//
// On a shared machine a step's or a request's wall time grows with the other processes' load;
// the CPU time hardly does, so it compares settings where wall times swing. The trainer's
// per-step cpu_s (train/metrics.h) and the serving benchmarks (bench/bench_util.h) read this one.
#pragma once

namespace trex {

// User + system CPU seconds of this process, every thread (clock_gettime's
// CLOCK_PROCESS_CPUTIME_ID: nanoseconds, where getrusage gives microseconds); 0 if unreadable.
double process_cpu_seconds();

}  // namespace trex
