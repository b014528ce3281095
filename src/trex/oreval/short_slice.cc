// sched_setattr with a custom slice, keeping policy and nice; why, in short_slice.h.
#include "trex/oreval/short_slice.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace trex::oreval {

namespace {

// struct sched_attr as of its first version (SCHED_ATTR_SIZE_VER0, 48 bytes): the fields a
// slice needs; the kernel reads and writes only the size given.
struct SchedAttr {
  uint32_t size;
  uint32_t policy;
  uint64_t flags;
  int32_t nice;
  uint32_t priority;
  uint64_t runtime;  // SCHED_OTHER: the custom slice, in ns (Linux 6.12)
  uint64_t deadline;
  uint64_t period;
};

constexpr uint64_t kResetOnFork = 0x01;  // SCHED_FLAG_RESET_ON_FORK

bool read_attr(pid_t tid, SchedAttr& attr) {
#ifdef SYS_sched_getattr
  std::memset(&attr, 0, sizeof(attr));
  return syscall(SYS_sched_getattr, tid, &attr, unsigned(sizeof(attr)), 0u) == 0;
#else
  (void)tid, (void)attr;
  return false;
#endif
}

}  // namespace

bool request_short_slice(pid_t tid) {
  if (const char* env = std::getenv("TREX_SHORT_SLICE"); env && std::strcmp(env, "0") == 0) return false;
#ifdef SYS_sched_setattr
  SchedAttr attr;
  if (!read_attr(tid, attr) || attr.policy != SCHED_OTHER) return false;
  if (attr.runtime == kShortSliceNs) return true;
  SchedAttr wanted{};
  wanted.size = sizeof(wanted);
  wanted.policy = SCHED_OTHER;
  wanted.flags = attr.flags & kResetOnFork;  // kept as it was
  wanted.nice = attr.nice;  // the same value: no privilege needed, nothing raised
  wanted.runtime = kShortSliceNs;
  if (syscall(SYS_sched_setattr, tid, &wanted, 0u) != 0) return false;
  return read_attr(tid, attr) && attr.runtime == kShortSliceNs;
#else
  (void)tid;
  return false;
#endif
}

}  // namespace trex::oreval
