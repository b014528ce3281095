// close_range with a per-descriptor fallback; why, in close_fds.h.
#include "trex/oreval/close_fds.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace trex::oreval {

namespace {

bool kept(int fd, const int* keep, int nkeep) {
  for (int i = 0; i < nkeep; ++i)
    if (keep[i] == fd) return true;
  return false;
}

// close_range over [first, last]; false when the kernel lacks it or refuses.
bool close_range_checked(unsigned first, unsigned last) {
  if (first > last) return true;
#ifdef SYS_close_range
  return syscall(SYS_close_range, first, last, 0u) == 0;
#else
  return false;
#endif
}

}  // namespace

bool close_fds_from(int lowest, const int* keep, int nkeep) {
  // The gaps between kept descriptors, in ascending order (keep is short and unsorted).
  bool ok = true;
  unsigned first = unsigned(lowest);
  while (true) {
    int next_keep = -1;
    for (int i = 0; i < nkeep; ++i)
      if (keep[i] >= int(first) && (next_keep < 0 || keep[i] < next_keep)) next_keep = keep[i];
    unsigned last = next_keep < 0 ? ~0u : unsigned(next_keep) - 1;
    if (next_keep != int(first) && !close_range_checked(first, last)) {
      ok = false;
      break;
    }
    if (next_keep < 0) break;
    first = unsigned(next_keep) + 1;
  }
  if (ok) return true;
  // Fallback: every descriptor below the limit; one a process holds cannot lie above it
  // unless the limit was lowered after it was opened, which trex never does.
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return false;
  rlim_t top = r.rlim_cur == RLIM_INFINITY || r.rlim_cur > (1u << 20) ? (1u << 20) : r.rlim_cur;
  for (rlim_t fd = rlim_t(lowest); fd < top; ++fd)
    if (!kept(int(fd), keep, nkeep)) close(int(fd));  // EBADF for most: harmless
  return true;
}

}  // namespace trex::oreval
