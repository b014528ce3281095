// A stand-in for libtrex_sandbox_enter.so whose workspace attach is always refused, for
// WarmPool.AnInterpreterThatCannotAttachItsWorkspaceRunsNothing: the evaluator's once-per-process
// check (in C++, workspace.h) passes, and the warm interpreter's bootstrap, which loads this
// library in its place, is then refused, as where the check and the attach disagree (a
// seccomp filter or an LSM that refuses the interpreter what it let the probe child do).
#include <cstddef>
#include <cstdio>

extern "C" __attribute__((visibility("default"))) int trex_sandbox_attach_workspace(int, const char*, char* buf,
                                                                                    int len) {
  if (len > 0) std::snprintf(buf, std::size_t(len), "move_mount: refused by the test's stand-in library");
  return -1;
}
