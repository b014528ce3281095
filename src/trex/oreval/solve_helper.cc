// Starting the exec'd solve helper and reading its reply; the threats and the limits are in
// solve_helper.h, the helper itself in apps/solve_helper.
#include "trex/oreval/solve_helper.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "nlohmann/json.hpp"
#include "trex/oreval/model_wire.h"

extern char** environ;

namespace trex::oreval {

namespace {

constexpr const char* kHelperName = "trex-solve-helper";
// A reply holds one value per variable; a model the file cap admits stays far below this.
constexpr size_t kMaxReplyBytes = size_t(256) << 20;

lp::SolveStatus status_from_name(const std::string& name) {
  using S = lp::SolveStatus;
  for (S s : {S::kOptimal, S::kInfeasible, S::kUnbounded, S::kInfeasibleOrUnbounded, S::kTimeLimitFeasible,
              S::kTimeLimitNoSolution, S::kUnsupported, S::kError})
    if (name == lp::to_string(s)) return s;
  return S::kError;
}

lp::SolveResult failed(lp::SolveStatus status, const std::string& message, double seconds) {
  lp::SolveResult r;
  r.status = status;
  r.message = message;
  r.seconds = seconds;
  return r;
}

bool executable(const std::string& path) { return !path.empty() && access(path.c_str(), X_OK) == 0; }

// What the helper's exit status means when it wrote no reply (apps/solve_helper's codes).
std::string exit_reason(int code) {
  switch (code) {
    case 120: return "could not close its inherited descriptors";
    case 121: return "could not set its resource limits";
    case 122: return "could not drop to user nobody";
    case 123: return "could not set no_new_privs";
    case 124: return "was started with bad arguments";
    default: return "exited with status " + std::to_string(code);
  }
}

// The input bytes in an anonymous file, at offset 0: the helper's stdin. A file, not a pipe:
// nothing has to be written while the helper reads, and a helper that never reads blocks no one.
int input_file(const std::string& bytes) {
  int fd = memfd_create("trex-solve-input", MFD_CLOEXEC);
  if (fd < 0) return -1;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = errno;
      close(fd);
      errno = w < 0 ? e : EIO;
      return -1;
    }
    done += size_t(w);
  }
  if (lseek(fd, 0, SEEK_SET) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

std::string format_double(double d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

}  // namespace

HelperInput HelperInput::record(std::string text, std::string file) {
  HelperInput in;
  in.kind = Kind::kRecord;
  in.bytes = std::move(text);
  in.file = std::move(file);
  return in;
}

HelperInput HelperInput::model(const lp::Model& m) {
  HelperInput in;
  in.kind = Kind::kModel;
  in.bytes = model_to_wire(m);
  in.file = "the model";
  return in;
}

std::string solve_helper_program(std::string* why) {
  if (const char* env = std::getenv("TREX_SOLVE_HELPER"); env && *env) {
    if (executable(env)) return env;
    if (why) *why = std::string("TREX_SOLVE_HELPER=") + env + " is not an executable program";
    return "";
  }
  // Beside the running binary first: a trex copied elsewhere must not exec the build tree's
  // helper (perhaps stale, with an older wire format) only because that path still exists.
  std::string looked;
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::string beside = (exe.parent_path() / kHelperName).string();
    if (executable(beside)) return beside;
    looked = beside;
  } else {
    looked = "beside the running program (/proc/self/exe unreadable)";
  }
#ifdef TREX_SOLVE_HELPER_PROGRAM
  if (executable(TREX_SOLVE_HELPER_PROGRAM)) return TREX_SOLVE_HELPER_PROGRAM;
  looked += std::string(", ") + TREX_SOLVE_HELPER_PROGRAM;
#endif
  if (why)
    *why = std::string("the solve helper program ") + kHelperName + " was not found (looked at " + looked +
           "); build it with `cmake --build build --target " + kHelperName + "` or set TREX_SOLVE_HELPER";
  return "";
}

namespace {

// A descriptor closed when it goes out of scope, on every return and exception path.
class OwnedFd {
 public:
  explicit OwnedFd(int fd = -1) : fd_(fd) {}
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd() { reset(); }
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

// posix_spawn's file actions and attributes, destroyed on every path once initialised.
struct SpawnSetup {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  bool fa_ok = false, attr_ok = false;
  ~SpawnSetup() {
    if (fa_ok) posix_spawn_file_actions_destroy(&fa);
    if (attr_ok) posix_spawnattr_destroy(&attr);
  }
};

// The started helper: killed and reaped when it goes out of scope unless wait() reaped it, so
// no path out of solve_in_helper (an exception included) leaves it running or a zombie.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    wait();
  }
  void kill_now() { kill(pid_, SIGKILL); }
  int wait() {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = 0;
    return status;
  }

 private:
  pid_t pid_;
};

double monotonic_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

lp::SolveResult spawn_failed(const char* step, int err) {
  return failed(lp::SolveStatus::kError, std::string("solve helper: ") + step + ": " + strerror(err), 0);
}

lp::SolveResult run_helper(const HelperInput& input, const std::string& solver, const HelperLimits& limits,
                           HelperProcess* who) {
  // One deadline on CLOCK_MONOTONIC, which the helper reads too: its start-up counts against
  // the solve's time, and the solver's limit ends before the moment this process waits for.
  const double start = monotonic_seconds();
  const double deadline = start + limits.seconds_left;
  const double kill_at = deadline + solve_helper_grace_s(limits.seconds_left);
  auto elapsed = [&] { return monotonic_seconds() - start; };
  if (limits.seconds_left <= 0) return failed(lp::SolveStatus::kTimeLimitNoSolution, "no time left for the solve", 0);
  std::string why;
  std::string program = limits.program.empty() ? solve_helper_program(&why) : limits.program;
  if (program.empty()) return failed(lp::SolveStatus::kError, why, 0);

  OwnedFd in_fd(input_file(input.bytes));
  if (in_fd.get() < 0) return spawn_failed("input file", errno);
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return spawn_failed("pipe", errno);
  OwnedFd reply_fd(pipe_fds[0]), write_end(pipe_fds[1]);
  // stdin the input, stdout the reply pipe, stderr /dev/null; every other descriptor the
  // evaluator has open without O_CLOEXEC the helper closes itself, first thing. Every step is
  // checked: a helper started without its stdin in place would read the evaluator's.
  SpawnSetup sp;
  int err = posix_spawn_file_actions_init(&sp.fa);
  if (err != 0) return spawn_failed("file actions", err);
  sp.fa_ok = true;
  err = posix_spawnattr_init(&sp.attr);
  if (err != 0) return spawn_failed("spawn attributes", err);
  sp.attr_ok = true;
  if ((err = posix_spawn_file_actions_adddup2(&sp.fa, in_fd.get(), 0)) != 0 ||
      (err = posix_spawn_file_actions_adddup2(&sp.fa, write_end.get(), 1)) != 0 ||
      (err = posix_spawn_file_actions_addopen(&sp.fa, 2, "/dev/null", O_WRONLY, 0)) != 0)
    return spawn_failed("file actions", err);
  // Default dispositions and no blocked signal: what the evaluator ignores (SIGPIPE) or blocks
  // must not carry over into the helper.
  sigset_t all, none;
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  sigemptyset(&none);
  if ((err = posix_spawnattr_setsigdefault(&sp.attr, &all)) != 0 ||
      (err = posix_spawnattr_setsigmask(&sp.attr, &none)) != 0 ||
      (err = posix_spawnattr_setflags(&sp.attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)) != 0)
    return spawn_failed("spawn attributes", err);
  std::string deadline_arg = format_double(deadline), memory_arg = std::to_string(limits.memory_bytes);
  const char* kind = input.kind == HelperInput::Kind::kRecord ? "record" : "model";
  const char* argv[] = {program.c_str(), solver.c_str(), deadline_arg.c_str(), memory_arg.c_str(),
                        kind, input.file.c_str(), nullptr};
  // trex's environment (a sanitizer build's options among it), with OpenBLAS (under COIN-OR's
  // dense factorisation) on one thread: the helper is single-threaded by design, and each
  // OpenBLAS thread would reserve its own buffer inside the helper's address-space limit.
  std::vector<const char*> envp;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "OPENBLAS_NUM_THREADS=", 21) != 0 && std::strncmp(*e, "OMP_NUM_THREADS=", 16) != 0)
      envp.push_back(*e);
  envp.push_back("OPENBLAS_NUM_THREADS=1");
  envp.push_back("OMP_NUM_THREADS=1");
  envp.push_back(nullptr);
  pid_t pid = 0;
  err = posix_spawn(&pid, program.c_str(), &sp.fa, &sp.attr, const_cast<char* const*>(argv),
                    const_cast<char* const*>(envp.data()));
  if (err != 0)
    return failed(lp::SolveStatus::kError, "cannot start the solve helper " + program + ": " + strerror(err), 0);
  Child child(pid);
  in_fd.reset();
  write_end.reset();
  // The helper's solver stops short of the deadline; it is killed only a grace period past it,
  // so a solve that ran to its limit still delivers its best solution.
  std::string text;
  bool timed_out = false, too_long = false;
  char buf[65536];
  while (true) {
    double left = kill_at - monotonic_seconds();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{reply_fd.get(), POLLIN, 0};
    int r = poll(&p, 1, int(std::ceil(left * 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;  // the loop head sees the deadline
    ssize_t got = read(reply_fd.get(), buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    text.append(buf, size_t(got));
    if (text.size() > kMaxReplyBytes) {
      too_long = true;
      break;
    }
  }
  reply_fd.reset();
  if (timed_out || too_long) child.kill_now();
  int status = child.wait();
  double seconds = elapsed();
  if (timed_out) return failed(lp::SolveStatus::kTimeLimitNoSolution, "the solve passed the program's deadline", seconds);
  if (too_long) return failed(lp::SolveStatus::kError, "the solve helper's reply is too long", seconds);
  if (WIFSIGNALED(status))
    return failed(lp::SolveStatus::kError, std::string("the solve helper was killed by ") + strsignal(WTERMSIG(status)),
                  seconds);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return failed(lp::SolveStatus::kError, "the solve helper " + exit_reason(WEXITSTATUS(status)), seconds);
  try {
    auto j = nlohmann::json::parse(text);
    lp::SolveResult r;
    r.status = status_from_name(j.at("status").get<std::string>());
    r.message = j.value("message", std::string());
    if (j.contains("objective") && j["objective"].is_number()) r.objective = j["objective"].get<double>();
    if (j.contains("x") && j["x"].is_array()) r.x = j["x"].get<std::vector<double>>();
    r.solver = j.value("solver", std::string());
    r.solver_version = j.value("solver_version", std::string());
    if (j.contains("best_bound") && j["best_bound"].is_number()) r.best_bound = j["best_bound"].get<double>();
    if (j.contains("duals") && j["duals"].is_array()) r.duals = j["duals"].get<std::vector<double>>();
    if (j.contains("reduced_costs") && j["reduced_costs"].is_array())
      r.reduced_costs = j["reduced_costs"].get<std::vector<double>>();
    r.seconds = seconds;
    if (who && j.contains("helper") && j["helper"].is_object()) {
      const auto& h = j["helper"];
      who->pid = h.value("pid", 0L);
      who->uid = h.value("uid", -1L);
      who->exe = h.value("exe", std::string());
    }
    return r;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    return failed(lp::SolveStatus::kError, std::string("the solve helper's reply is unreadable: ") + e.what(), seconds);
  }
}

}  // namespace

lp::SolveResult solve_in_helper(const HelperInput& input, const std::string& solver, const HelperLimits& limits,
                                HelperProcess* who) {
  // Every descriptor and the child are owned by guards in run_helper, so an exception (memory
  // running out while the reply grows, say) has closed and reaped them all by the time it gets
  // here; the message is short enough to need no allocation.
  try {
    return run_helper(input, solver, limits, who);
  } catch (const std::bad_alloc&) {
    lp::SolveResult r;
    r.status = lp::SolveStatus::kError;
    r.message = "out of memory";
    return r;
  } catch (...) {
    lp::SolveResult r;
    r.status = lp::SolveStatus::kError;
    r.message = "solve helper: unexpected exception";
    return r;
  }
}

}  // namespace trex::oreval
