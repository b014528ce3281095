// The warm interpreter's request loop in C (python/trex_eval_zygote.py's serve_in_c, issue 19):
// the loop of serve() over the evaluator's requests, with no Python between two forks. Every
// object a Python loop touches (its messages, descriptors' wrappers, the functions it calls, the
// pymalloc pools it allocates from) sits on a page that each fork write-protects again, so the
// zygote took about 100 page faults per program after its forks (about 5 ms of CPU on this
// project's machine, whose page faults trap through a hypervisor: 1.6 ms for a bare fork);
// this loop writes only its stack and a few statics.
//
// The protocol is serve()'s (the module's docstring): the request and its three descriptors
// handed to the child forked ahead of it, {"pid": N}, {"wait": SECONDS}, {"status": S,
// "timed_out": B}. The children are forked here as os.fork forks them (PyOS_BeforeFork, fork,
// PyOS_AfterFork_Child or _Parent, found in the interpreter that loaded this library), and a
// child returns to Python, which runs what WaitingChild's child runs: the layers that do not
// depend on the request, then the request (every sandbox layer before anything of the program).
// Its copies ahead it makes here, first thing after the fork (copy_ahead_now); which pages, the
// loop finds by surveying its first programs' children (trex_zygote_survey). The next child is
// forked after a program's status, or, where the evaluator leaves a CPU idle beside each worker
// (trex_zygote_fork_early), as soon as the program's {"pid": N} is sent, so that it gets ready
// while that program runs (serve()'s Python loop forks it after the status). Loaded with
// ctypes.PyDLL, so the interpreter's lock is held throughout, as os.fork holds it.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// A namespace of its own: a unity build puts this file beside the part's others, whose file-local
// helpers have names like these (kill_group).
namespace trex::oreval::zygote_loop {
namespace {

enum Outcome : int {
  kEvaluatorGone = 0,  // the evaluator closed the socket: the zygote exits
  kInChild = 1,        // in a child forked ahead of its request: *child_sock is its socket
  kTrainingReady = 2,  // the training child's answer can be read: Python reads it, then calls again
  kFailed = -1,        // the interpreter's fork hooks were not found: nothing was forked
  kBadWait = 3,        // the message after {"pid": N} was not {"wait": SECONDS}: the child was
                       // killed and reaped, the waiting one stopped; Python raises, the zygote exits
                       // (as serve()'s Python loop does on that message)
};

// The answer when no child can be forked for a request (the waiting one died, and the fork or the
// socket for a new one failed: EAGAIN at RLIMIT_NPROC, EMFILE).
constexpr char kNoChild[] = "{\"error\": \"no child for the request\"}";

using Hook = void (*)();

struct Hooks {
  Hook before = nullptr, child = nullptr, parent = nullptr;
};

// The child forked ahead of the next request (WaitingChild): pid and the zygote's end of its socket.
pid_t g_waiting = -1;
int g_waiting_sock = -1;

// The runs each child copies ahead (trex_zygote_copy_ahead: the caller keeps them alive), and
// whether process_madvise takes MADV_POPULATE_WRITE here (all of them in one call).
const iovec* g_runs = nullptr;
int g_run_count = 0;
bool g_one_call = false;
bool g_one_call_allowed = true;  // trex_zygote_copy_ahead_one_call: false tests the per-run path

// trex_zygote_fork_early: the next child is forked while the current program runs.
bool g_fork_early = false;

// The survey (trex_zygote_survey): which of the zygote's candidate pages the first programs'
// children write, read by the zygote from each child's /proc/PID/pagemap while it runs. All its
// memory is one anonymous mapping made when it is asked for, after the candidates were read
// (private_pages()), so none of its pages is a candidate; each child unmaps it first thing.
struct Survey {
  iovec* candidates = nullptr;  // the zygote's own runs (private_pages()), page-aligned
  int candidate_count = 0;
  size_t pages = 0;                 // pages in all candidates
  uint8_t* written_by = nullptr;    // per candidate page: how many surveyed children wrote it
  uint8_t* seen = nullptr;          // per candidate page: the current child wrote it
  uint64_t* entries = nullptr;      // a chunk of pagemap entries
  void* mapping = nullptr;
  size_t mapping_size = 0;
  int children_left = 0;  // children still to survey: none, no survey
  int at_least = 0;       // a page is copied ahead when at least this many of them wrote it
};
Survey g_survey;
constexpr size_t kEntriesPerRead = 512;
// The waiting child's and the running child's pagemap, opened by the zygote right after their
// fork (while the child still runs as the zygote's user, before its layers: the open is the
// kernel's access check, reads go to the mm it opened), or -1 (not surveyed). Every child closes
// both first thing: no program holds a descriptor of another process's memory map.
int g_waiting_map = -1;
int g_running_map = -1;
// The runs the survey chose, kept here, and the io_uring whose registered buffers pin them
// (pin_runs), or -1 where they are copied ahead instead.
iovec* g_survey_runs = nullptr;
int g_ring = -1;
size_t g_pinned_pages = 0;
bool g_pin_allowed = true;  // trex_zygote_pin: false tests the copy ahead after a survey

void register_runs(const iovec* runs, int count);
bool pin_runs(const iovec* runs, int count);

constexpr int kPopulateWrite = 23;  // MADV_POPULATE_WRITE (Linux 5.14)
constexpr int kMaxRunsPerCall = 1024;  // UIO_MAXIOV

long process_madvise_self(int pidfd, const iovec* runs, int count) {
#ifdef SYS_process_madvise
  return syscall(SYS_process_madvise, pidfd, runs, size_t(count), kPopulateWrite, 0u);
#else
  (void)pidfd, (void)runs, (void)count;
  errno = ENOSYS;
  return -1;
#endif
}

// In a child, first thing after the fork, before the interpreter's own after-fork work reads
// any of these pages: its copies of the runs (copy_ahead's, in C). A page read before it is
// copied costs more to copy here (its translation must be flushed: 26 against 7.5 us a page,
// measured). A run that fails is passed over: its pages are copied at their first write.
void copy_ahead_now() {
  int i = 0;
  int pidfd = g_one_call ? int(syscall(SYS_pidfd_open, getpid(), 0)) : -1;
  if (pidfd >= 0) {
    while (i < g_run_count) {
      int count = g_run_count - i < kMaxRunsPerCall ? g_run_count - i : kMaxRunsPerCall;
      long done = process_madvise_self(pidfd, g_runs + i, count);
      if (done < 0) {
        ++i;  // the first run asked failed
        continue;
      }
      // The kernel stops at the first run that fails and answers the bytes of those before it.
      int end = i + count;
      while (i < end && size_t(done) >= g_runs[i].iov_len) {
        done -= long(g_runs[i].iov_len);
        ++i;
      }
      if (i < end) ++i;
    }
    close(pidfd);
    return;
  }
  for (; i < g_run_count; ++i) madvise(g_runs[i].iov_base, g_runs[i].iov_len, kPopulateWrite);
}

// The survey's sample of a running child: of the candidate pages, the ones it maps present and
// exclusively (its own copies: pages it wrote; a page it still shares with the zygote, or with
// the child forked early beside it, is not). False when its memory is gone (it has exited: the
// read answers nothing), true otherwise.
bool sample_child(int map) {
  const Survey& s = g_survey;
  constexpr uint64_t kPresent = uint64_t(1) << 63, kExclusive = uint64_t(1) << 56;
  // Entries are read kEntriesPerRead pages at a time from the first page not yet read, so that
  // the runs near one another (most of them: the gaps are a few pages) cost one read.
  uintptr_t window = 0;
  size_t window_pages = 0, index = 0;
  for (int r = 0; r < s.candidate_count; ++r) {
    uintptr_t page = uintptr_t(s.candidates[r].iov_base) >> 12;
    size_t left = s.candidates[r].iov_len >> 12;
    while (left > 0) {
      if (page < window || page >= window + window_pages) {
        ssize_t got = pread(map, s.entries, kEntriesPerRead * 8, off_t(page * 8));
        if (got < 8) return false;
        window = page;
        window_pages = size_t(got) / 8;
      }
      size_t take = window + window_pages - page;
      if (take > left) take = left;
      for (size_t i = 0; i < take; ++i) {
        uint64_t entry = s.entries[page - window + i];
        if ((entry & kPresent) && (entry & kExclusive)) s.seen[index + i] = 1;
      }
      index += take, page += take, left -= take;
    }
  }
  return true;
}

void end_survey() {
  Survey& s = g_survey;
  if (g_waiting_map >= 0) close(g_waiting_map);
  if (g_running_map >= 0) close(g_running_map);
  g_waiting_map = g_running_map = -1;
  if (s.mapping) munmap(s.mapping, s.mapping_size);
  s = Survey{};
}

// A surveyed child has ended: its pages count; after the last one, the pages at least `at_least`
// of them wrote become the runs every child forked from now on copies ahead.
void survey_child_done(int map) {
  Survey& s = g_survey;
  close(map);
  if (s.children_left <= 0) return;  // the survey ended while it ran
  for (size_t i = 0; i < s.pages; ++i) {
    s.written_by[i] = uint8_t(s.written_by[i] + s.seen[i]);
    s.seen[i] = 0;
  }
  if (--s.children_left > 0) return;
  // Runs of the chosen pages, adjacent ones merged (at most one run per page).
  int count = 0;
  size_t index = 0;
  iovec* runs = static_cast<iovec*>(malloc((s.pages ? s.pages : 1) * sizeof(iovec)));
  for (int r = 0; runs && r < s.candidate_count; ++r) {
    char* base = static_cast<char*>(s.candidates[r].iov_base);
    for (size_t p = 0; p < (s.candidates[r].iov_len >> 12); ++p, ++index) {
      if (s.written_by[index] < s.at_least) continue;
      char* at = base + (p << 12);
      if (count > 0 && static_cast<char*>(runs[count - 1].iov_base) + runs[count - 1].iov_len == at)
        runs[count - 1].iov_len += 4096;
      else
        runs[count++] = iovec{at, 4096};
    }
  }
  end_survey();
  if (runs && count > 0) {
    free(g_survey_runs);
    g_survey_runs = runs;
    if (!(g_pin_allowed && pin_runs(runs, count))) register_runs(runs, count);
  } else {
    free(runs);
  }
}

// The chosen runs pinned in the zygote (the buffers of an io_uring of its own, which is never
// used otherwise): the kernel copies a pinned page into a child at the fork itself (its early
// copy for pages that may be under DMA, Linux 5.9 and later) instead of sharing it, so the child
// finds those pages its own, writable, with no copy-on-write fault and no copy ahead to make.
// That copy costs the zygote's fork about 1-3 us a page here; the copy ahead cost the child
// more (its page-table change and TLB flush trap through the hypervisor). True when pinned; false
// (nothing changed) where io_uring is missing or refused (kernel.io_uring_disabled, seccomp, the
// memlock limit): the children then copy the runs ahead.
bool pin_runs(const iovec* runs, int count) {
#if defined(SYS_io_uring_setup) && defined(SYS_io_uring_register)
  io_uring_params params{};
  int ring = int(syscall(SYS_io_uring_setup, 1u, &params));
  if (ring < 0) return false;
  if (syscall(SYS_io_uring_register, ring, IORING_REGISTER_BUFFERS, runs, unsigned(count)) != 0) {
    close(ring);
    return false;
  }
  if (g_ring >= 0) close(g_ring);  // an earlier survey's ring: its pages are no longer listed
  g_ring = ring;
  g_pinned_pages = 0;
  for (int i = 0; i < count; ++i) g_pinned_pages += runs[i].iov_len >> 12;
  return true;
#else
  (void)runs, (void)count;
  return false;
#endif
}

double monotonic_ms() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return double(now.tv_sec) * 1e3 + double(now.tv_nsec) * 1e-6;
}

// When the running child was handed its request (surveyed children only).
double g_running_since = 0;

// Milliseconds until the next sample of the running child: 1 for its first 100 ms (most programs'
// whole life here), then a fiftieth of its age, at most 100, so that a program that runs long
// (to its wall clock, or in a solve) costs the zygote a few hundred reads, not one a millisecond.
// A page stays the child's own once written, so a later sample still sees it; only the writes of
// a child's last interval can be missed (copied at their first write, as before).
int sample_interval_ms() {
  double age = monotonic_ms() - g_running_since;
  return age < 100 ? 1 : age > 5000 ? 100 : int(age / 50);
}

// The zygote's side of a fork while the survey runs: the new child's pagemap.
void open_child_map(pid_t pid) {
  if (g_survey.children_left <= 0 || pid <= 0) return;
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/pagemap", int(pid));
  g_waiting_map = open(path, O_RDONLY | O_CLOEXEC);
}

ssize_t send_all(int fd, const char* data, size_t size) {
  ssize_t n;
  do n = send(fd, data, size, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n;
}

// Forks the next waiting child as os.fork does. Returns true in the child (its socket's end in
// *child_sock), false in the zygote (g_waiting set; -1 when the fork or the socket failed: the
// request is then answered by the next fork, as serve() forks on the request).
bool fork_waiting(const Hooks& hooks, int* child_sock) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return false;
  hooks.before();
  pid_t pid = fork();
  if (pid == 0) {
    copy_ahead_now();
    // The zygote's survey is not the child's: no descriptor of another child's memory map (the
    // one beside it, forked early), nor what earlier programs' children were seen to write.
    if (g_running_map >= 0) close(g_running_map);
    if (g_waiting_map >= 0) close(g_waiting_map);
    g_running_map = g_waiting_map = -1;
    if (g_survey.mapping) munmap(g_survey.mapping, g_survey.mapping_size);
    g_survey = Survey{};
    if (g_ring >= 0) close(g_ring);  // its pages stay pinned in the zygote alone
    g_ring = -1;
    hooks.child();
    close(pair[0]);
    g_waiting = -1;
    g_waiting_sock = -1;
    *child_sock = pair[1];
    return true;
  }
  hooks.parent();
  close(pair[1]);
  if (pid < 0) {
    close(pair[0]);
    return false;
  }
  g_waiting = pid;
  g_waiting_sock = pair[0];
  open_child_map(pid);
  return false;
}

void stop_waiting() {
  if (g_waiting <= 0) return;
  close(g_waiting_sock);  // it reads the end and exits
  while (waitpid(g_waiting, nullptr, 0) < 0 && errno == EINTR) {
  }
  g_waiting = -1;
  g_waiting_sock = -1;
  if (g_waiting_map >= 0) close(g_waiting_map);
  g_waiting_map = -1;
}

// Gives the request and its descriptors to the waiting child; its pid, or -1 when there is none
// or it could not be reached (then it is killed and reaped).
pid_t hand(const char* message, size_t size, const int* fds) {
  pid_t pid = g_waiting;
  int sock = g_waiting_sock;
  g_waiting = -1;
  g_waiting_sock = -1;
  if (g_running_map >= 0) close(g_running_map);
  g_running_map = g_waiting_map;  // surveyed while it runs (wait_for)
  g_running_since = monotonic_ms();
  g_waiting_map = -1;
  if (pid <= 0) return -1;
  iovec iov{const_cast<char*>(message), size};
  alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(3 * sizeof(int));
  memcpy(CMSG_DATA(c), fds, 3 * sizeof(int));
  ssize_t n;
  do n = sendmsg(sock, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  close(sock);
  if (n == ssize_t(size)) return pid;
  if (g_running_map >= 0) close(g_running_map);
  g_running_map = -1;
  kill(pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return -1;
}

// SIGKILL to the child's group; to the child alone when it has no group of its own yet.
void kill_group(pid_t pid) {
  if (killpg(pid, SIGKILL) != 0) kill(pid, SIGKILL);
}

// wait_for(): waits until the child exits or `seconds` pass (then kills its group), kills what
// is left in the group while the exited leader still holds the pid, then reaps it.
int wait_for(pid_t pid, double seconds, bool* timed_out) {
  *timed_out = false;
  double ms = seconds > 0 ? seconds * 1000.0 : 0.0;
  int status = 0;
  int pidfd = int(syscall(SYS_pidfd_open, pid, 0));
  int map = g_running_map;
  g_running_map = -1;
  if (pidfd >= 0 && map >= 0) {
    // Surveyed: its pagemap sampled until it exits (sample_interval_ms).
    double end = monotonic_ms() + ms;
    pollfd p{pidfd, POLLIN, 0};
    for (;;) {
      double left = end - monotonic_ms();
      // At or past the deadline one poll that does not wait: a child that exited before it (the
      // evaluator's {"wait": 0} after its own wall clock) has not timed out, as below.
      int step = sample_interval_ms();
      int wait_ms = left <= 0 ? 0 : left < step ? int(left + 0.999) : step;
      int r;
      do r = poll(&p, 1, wait_ms);
      while (r < 0 && errno == EINTR);
      if (r != 0) break;  // it exited, or the poll failed: reaped below, as without the survey
      if (left <= 0) {
        *timed_out = true;
        kill_group(pid);
        break;
      }
      sample_child(map);
    }
    close(pidfd);
    survey_child_done(map);
  } else if (pidfd >= 0) {
    if (map >= 0) close(map);
    pollfd p{pidfd, POLLIN, 0};
    int r;
    do r = poll(&p, 1, ms > 2e9 ? int(2e9) : int(ms + 0.999));
    while (r < 0 && errno == EINTR);
    if (r == 0) {
      *timed_out = true;
      kill_group(pid);
    }
    close(pidfd);
  } else {
    if (map >= 0) close(map);
    // No pidfd (Linux before 5.3): 2 ms polls of its state, without reaping it (WNOWAIT).
    siginfo_t info;
    for (double waited = 0;; waited += 2) {
      info.si_pid = 0;
      int r = waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT);
      if ((r == 0 && info.si_pid == pid) || (r < 0 && errno != EINTR)) break;
      if (waited >= ms) {
        *timed_out = true;
        kill_group(pid);
        break;
      }
      usleep(2000);
    }
  }
  killpg(pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// SECONDS of {"wait": SECONDS} (nlohmann's dump, or with a space); -1 when it is not that shape
// (no such key, no number after it, or a negative one: the evaluator sends what is left of the
// program's wall clock, never less than 0).
double wait_seconds(const char* message, size_t size) {
  static const char kKey[] = "\"wait\":";
  const char* key = static_cast<const char*>(memmem(message, size, kKey, sizeof(kKey) - 1));
  if (!key) return -1;
  char number[64];
  size_t from = size_t(key - message) + sizeof(kKey) - 1, n = 0;
  while (from < size && message[from] == ' ') ++from;
  while (from < size && n + 1 < sizeof(number) && message[from] != '}') number[n++] = message[from++];
  number[n] = 0;
  char* end = nullptr;
  double seconds = strtod(number, &end);
  if (end == number || !(seconds >= 0)) return -1;
  return seconds;
}

// trex_zygote_copy_ahead's work, also the survey's end (survey_child_done).
void register_runs(const iovec* runs, int count) {
  static int probed = -1;
  if (probed < 0) {
    probed = 0;
    void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int pidfd = int(syscall(SYS_pidfd_open, getpid(), 0));
    if (page != MAP_FAILED && pidfd >= 0) {
      iovec one{page, 4096};
      unsigned char present = 0;
      probed = process_madvise_self(pidfd, &one, 1) == 4096 && mincore(page, 4096, &present) == 0 && (present & 1);
    }
    if (pidfd >= 0) close(pidfd);
    if (page != MAP_FAILED) munmap(page, 4096);
  }
  g_one_call = probed == 1 && g_one_call_allowed;
  g_runs = runs;
  g_run_count = runs ? count : 0;
}

}  // namespace

int serve(int ctl, int training_fd, const char* ready, int* child_sock) {
  Hooks hooks;
  hooks.before = reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "PyOS_BeforeFork"));
  hooks.child = reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "PyOS_AfterFork_Child"));
  hooks.parent = reinterpret_cast<Hook>(dlsym(RTLD_DEFAULT, "PyOS_AfterFork_Parent"));
  if (!hooks.before || !hooks.child || !hooks.parent) return kFailed;
  static char message[1 << 20];
  char answer[128];
  for (;;) {
    if (g_waiting <= 0 && fork_waiting(hooks, child_sock)) return kInChild;
    if (ready) {
      send_all(ctl, ready, strlen(ready));
      ready = nullptr;
    }
    // The request and its three descriptors.
    iovec iov{message, sizeof(message)};
    alignas(cmsghdr) char control[CMSG_SPACE(8 * sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n;
    do n = recvmsg(ctl, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    // A failed recvmsg leaves msg_controllen as it was: the walk below would read the previous
    // request's descriptors' numbers (since reused) from `control`.
    if (n < 0) msg.msg_controllen = 0;
    int fds[8];
    int nfds = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      int count = int((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      for (int i = 0; i < count; ++i) {
        int fd;
        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        if (nfds < 8) fds[nfds++] = fd;
        else close(fd);
      }
    }
    if (n <= 0) {
      for (int i = 0; i < nfds; ++i) close(fds[i]);
      stop_waiting();
      return kEvaluatorGone;
    }
    if (nfds != 3) {
      for (int i = 0; i < nfds; ++i) close(fds[i]);
      explicit_bzero(message, size_t(n));
      int len = snprintf(answer, sizeof(answer), "{\"error\": \"expected 3 descriptors, got %d\"}", nfds);
      send_all(ctl, answer, size_t(len));
      continue;
    }
    pid_t pid = hand(message, size_t(n), fds);
    if (pid < 0) {
      // The waiting child is gone: a new one gets this request (the zygote's state is the same):
      if (fork_waiting(hooks, child_sock)) {
        for (int i = 0; i < 3; ++i) close(fds[i]);  // the zygote's numbers: it is handed its own
        return kInChild;                               // and waits for the request below
      }
      pid = hand(message, size_t(n), fds);
    }
    for (int i = 0; i < 3; ++i) close(fds[i]);
    // Every child forked from now on gets a copy of `message`: none of them may find this
    // program's request there (its working directory, environment, arguments, limits), as
    // serve()'s Python loop deletes its own.
    explicit_bzero(message, size_t(n));
    if (pid < 0) {
      send_all(ctl, kNoChild, sizeof(kNoChild) - 1);
      continue;
    }
    int len = snprintf(answer, sizeof(answer), "{\"pid\": %d}", int(pid));
    send_all(ctl, answer, size_t(len));
    // Forking early: the next program's child, forked now, while this program runs: its fork,
    // copies ahead and layers that do not depend on the request (a few milliseconds of CPU) then
    // use a CPU the program and the evaluator leave idle instead of lying between this program's
    // status and the next request (docs/eval.md: less wall, more CPU per program). Nothing of
    // this program is in the zygote by now (its descriptors closed, its request erased). What
    // keeps the program from that child is seccomp and Landlock, not the uid: in user-namespace
    // mode (trex not root) the program, this child, the zygote and trex share one host uid, so
    // the kernel's kill and ptrace_may_access checks would pass. The program's seccomp filter
    // lets it signal only itself or its own group and refuses ptrace, process_vm_*, pidfd_* and
    // tkill (seccomp_policy.cc); Landlock leaves /proc out of its paths (execute.cc), so there
    // is no /proc/PID/mem, fd/ or environ to open (Hostile.CannotReachTheEarlyForkedChild).
    // The warm pool, and so this path, runs only where no layer is missing: with a missing
    // layer and --allow-weak-sandbox every program gets a fresh interpreter (execute.cc).
    if (g_fork_early && g_waiting <= 0 && fork_waiting(hooks, child_sock)) return kInChild;
    // Surveyed: the program runs until the evaluator's {"wait": SECONDS}, which it sends once the
    // child's output has ended (at its exit, after its memory is gone): sampled meanwhile
    // (sample_interval_ms), then in wait_for.
    if (g_running_map >= 0) {
      pollfd p{ctl, POLLIN, 0};
      bool alive = true;
      while (alive) {
        int r = poll(&p, 1, sample_interval_ms());
        if (r > 0 || (r < 0 && errno != EINTR)) break;
        if (r == 0) alive = sample_child(g_running_map);
      }
    }
    do n = recv(ctl, message, sizeof(message), 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0) {
      kill_group(pid);
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      stop_waiting();
      end_survey();
      return kEvaluatorGone;
    }
    double seconds = wait_seconds(message, size_t(n));
    explicit_bzero(message, size_t(n));
    if (seconds < 0) {
      kill_group(pid);
      while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      stop_waiting();
      end_survey();
      return kBadWait;
    }
    bool timed_out = false;
    int status = wait_for(pid, seconds, &timed_out);
    len = snprintf(answer, sizeof(answer), "{\"status\": %d, \"timed_out\": %s}", status, timed_out ? "true" : "false");
    send_all(ctl, answer, size_t(len));
    if (training_fd >= 0) {
      pollfd p{training_fd, POLLIN, 0};
      if (poll(&p, 1, 0) == 1) return kTrainingReady;
    }
  }
}

}  // namespace trex::oreval::zygote_loop

extern "C" {

// The zygote's loop (trex_eval_zygote.py's serve_in_c). `ready`: the "ready" message, sent once
// the first child is forked (the evaluator's shut-down relies on that order), or null on a later
// call. `training_fd`: the training child's pipe (PagesChildrenWrite), or -1: when it can be read
// between two programs, the loop returns kTrainingReady so that Python reads the answer before
// the next fork. Returns an Outcome.
__attribute__((visibility("default"))) int trex_zygote_serve(int ctl, int training_fd, const char* ready,
                                                             int* child_sock) {
  return trex::oreval::zygote_loop::serve(ctl, training_fd, ready, child_sock);
}

// The runs (address, length) each child forked from now on copies ahead, first thing after its
// fork (none: count 0). The caller keeps `runs` alive and unchanged while the loop forks.
// Probes once whether process_madvise takes MADV_POPULATE_WRITE for this process (Linux 6.13 and
// later take any advice for the caller itself), on a private page of its own; else one madvise
// per run. The caller has checked that madvise takes it (populate_write_works).
__attribute__((visibility("default"))) void trex_zygote_copy_ahead(const iovec* runs, int count) {
  trex::oreval::zygote_loop::register_runs(runs, count);
}

// Instead of a list given now: the list is what the next `children` programs' children write,
// as the kernel shows the zygote in each child's /proc/PID/pagemap while it runs (sampled by the
// loop while it waits, every millisecond at first: sample_interval_ms): of the `count` runs of `candidates` (the zygote's own present
// private pages, private_pages(); copied here), the pages at least `at_least` of those children
// mapped exclusively (wrote). The children surveyed copy nothing ahead; every child forked after
// the last one ends gets its own copies of those pages: at its fork where they can be pinned in
// the zygote (pin_runs), else first thing after it (trex_zygote_copy_ahead's way). Nothing comes
// from a child but what the kernel reports of it, and only for the zygote's own candidate pages:
// the list holds no address the zygote did not give. Returns 0, or -1 (no survey, nothing
// changed) when the arguments are out of range or its memory cannot be mapped. The caller has
// checked that madvise takes MADV_POPULATE_WRITE (populate_write_works).
__attribute__((visibility("default"))) int trex_zygote_survey(const iovec* candidates, int count, int children,
                                                              int at_least) {
  using namespace trex::oreval::zygote_loop;
  if (!candidates || count <= 0 || children <= 0 || children > 255 || at_least <= 0 || at_least > children) return -1;
  size_t pages = 0;
  for (int i = 0; i < count; ++i) {
    if ((uintptr_t(candidates[i].iov_base) & 4095) || (candidates[i].iov_len & 4095) || candidates[i].iov_len == 0)
      return -1;
    pages += candidates[i].iov_len >> 12;
  }
  if (pages > (size_t(1) << 24)) return -1;  // 64 GB of pages: not an interpreter's
  size_t size = size_t(count) * sizeof(iovec) + kEntriesPerRead * sizeof(uint64_t) + 2 * pages;
  size = (size + 4095) & ~size_t(4095);
  void* mapping = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) return -1;
  end_survey();
  // A survey again: the last one's pinned pages are no longer the list (children close only the
  // ring they would inherit, so none may be left behind).
  if (g_ring >= 0) close(g_ring);
  g_ring = -1;
  g_pinned_pages = 0;
  Survey& s = g_survey;
  s.mapping = mapping;
  s.mapping_size = size;
  char* at = static_cast<char*>(mapping);
  s.candidates = reinterpret_cast<iovec*>(at);
  memcpy(s.candidates, candidates, size_t(count) * sizeof(iovec));
  at += size_t(count) * sizeof(iovec);
  s.entries = reinterpret_cast<uint64_t*>(at);
  at += kEntriesPerRead * sizeof(uint64_t);
  s.written_by = reinterpret_cast<uint8_t*>(at);
  s.seen = s.written_by + pages;
  s.candidate_count = count;
  s.pages = pages;
  s.children_left = children;
  s.at_least = at_least;
  register_runs(nullptr, 0);  // the surveyed children copy nothing ahead
  return 0;
}

// How many pages the survey's list pinned (pin_runs; 0: none, copied ahead instead, or no list
// yet): the tests' view. `allowed` >= 0 sets whether a list made from then on may be pinned
// (1, the default) or must be copied ahead (0); -1 changes nothing.
__attribute__((visibility("default"))) long trex_zygote_pinned_pages(int allowed) {
  using namespace trex::oreval::zygote_loop;
  if (allowed >= 0) g_pin_allowed = allowed != 0;
  return long(g_pinned_pages);
}

// Whether trex_zygote_copy_ahead may use process_madvise where the kernel takes it (the default)
// or must use one madvise per run: the tests' way to run that path on a kernel that takes both.
// For the runs registered after it.
__attribute__((visibility("default"))) void trex_zygote_copy_ahead_one_call(int allowed) {
  trex::oreval::zygote_loop::g_one_call_allowed = allowed != 0;
}

// Whether the loop forks each next child as soon as the current program's {"pid": N} is sent
// (non-zero) or after its status (0, the default): the evaluator's choice (warm_pool.h
// warm_fork_early), passed on by trex_eval_zygote.py. For the programs handed from then on.
__attribute__((visibility("default"))) void trex_zygote_fork_early(int early) {
  trex::oreval::zygote_loop::g_fork_early = early != 0;
}

}  // extern "C"
