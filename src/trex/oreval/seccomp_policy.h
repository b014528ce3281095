// The seccomp filter of the sandbox: default deny, with an allow-list of the system calls that
// the interpreter, numpy and trex's module need.
//
// Precedence of the checks (the first that applies decides): the architecture must be x86-64
// and the x32 bit (0x40000000) clear, else the process is killed; a few calls are checked on
// their arguments (clone makes threads only; kill and tgkill reach only the program's own
// process and group; prlimit64 only reads; ioctl never injects terminal input nor makes a
// socket request (type 0x89); prctl only names threads and reads); the allow-list; everything
// else fails with ENOSYS (as on a kernel without the call, so libc falls back), except process
// creation, sockets and signals elsewhere, which fail with EPERM or EACCES so that the program
// sees a PermissionError.
// That is the precedence, not the order the filter runs them in: after the architecture it
// finds the call's number by a binary search over one rule per number (the first in that
// precedence), then runs that call's own check; seccomp_policy_in_order is the same rules
// checked one after another in the order above, for the tests to compare.
//
// The list was derived by tracing `trex eval run --references` over Bench4Opt's 186 reference
// programs (strace -f, every call a process made after its execve of the interpreter) and a
// program that imports numpy, starts a thread, sleeps and writes a file; the table marks
// which calls were traced. docs/eval.md has the command.
#pragma once

#include <linux/filter.h>
#include <stddef.h>
#include <sys/types.h>

#include <vector>

namespace trex::oreval {

// True where this build has a filter (x86-64 only).
bool seccomp_policy_available();

// The longest forward jump a conditional classic-BPF jump can make (its 8-bit offset).
inline constexpr size_t kSeccompLongestConditionalJump = 255;

// The filter for a child whose pid (and process-group id) is `self`. The calls with a check of
// their own are found by a binary search on the call's number. Where the lower half of a split
// is longer than `longest_conditional_jump` instructions (at most 255; larger is taken as 255)
// the split jumps over it with `ja`. The shipped rules never need that at 255; tests pass a
// smaller limit to run that layout.
std::vector<sock_filter> seccomp_policy(pid_t self,
                                        size_t longest_conditional_jump = kSeccompLongestConditionalJump);

// The same rules checked one after another in their order of precedence (the layout before the
// search): tests compare the two on every call number.
std::vector<sock_filter> seccomp_policy_in_order(pid_t self);

}  // namespace trex::oreval
