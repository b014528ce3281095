// Starting the exec'd solve helper and reading its reply; the threats and the limits are in
// solve_helper.h, the helper itself in apps/solve_helper.
#include "trex/oreval/solve_helper.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
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
  std::string looked;
#ifdef TREX_SOLVE_HELPER_PROGRAM
  if (executable(TREX_SOLVE_HELPER_PROGRAM)) return TREX_SOLVE_HELPER_PROGRAM;
  looked = std::string(TREX_SOLVE_HELPER_PROGRAM) + ", ";
#endif
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::string beside = (exe.parent_path() / kHelperName).string();
    if (executable(beside)) return beside;
    looked += beside;
  } else {
    looked += "beside the running program (/proc/self/exe unreadable)";
  }
  if (why)
    *why = std::string("the solve helper program ") + kHelperName + " was not found (looked at " + looked +
           "); build it with `cmake --build build --target " + kHelperName + "` or set TREX_SOLVE_HELPER";
  return "";
}

lp::SolveResult solve_in_helper(const HelperInput& input, const std::string& solver, const HelperLimits& limits,
                                HelperProcess* who) {
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  if (limits.seconds_left <= 0) return failed(lp::SolveStatus::kTimeLimitNoSolution, "no time left for the solve", 0);
  std::string why;
  std::string program = limits.program.empty() ? solve_helper_program(&why) : limits.program;
  if (program.empty()) return failed(lp::SolveStatus::kError, why, 0);

  int in_fd = input_file(input.bytes);
  if (in_fd < 0) return failed(lp::SolveStatus::kError, std::string("solve helper: input file: ") + strerror(errno), 0);
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    int e = errno;
    close(in_fd);
    return failed(lp::SolveStatus::kError, std::string("solve helper: pipe: ") + strerror(e), 0);
  }
  // stdin the input, stdout the reply pipe, stderr /dev/null; every other descriptor the
  // evaluator has open without O_CLOEXEC the helper closes itself, first thing.
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
  posix_spawn_file_actions_adddup2(&fa, pipe_fds[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  // Default dispositions and no blocked signal: what the evaluator ignores (SIGPIPE) or blocks
  // must not carry over into the helper.
  sigset_t all, none;
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::string seconds_arg = format_double(limits.seconds_left), memory_arg = std::to_string(limits.memory_bytes);
  const char* kind = input.kind == HelperInput::Kind::kRecord ? "record" : "model";
  const char* argv[] = {program.c_str(), solver.c_str(), seconds_arg.c_str(), memory_arg.c_str(),
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
  int err = posix_spawn(&pid, program.c_str(), &fa, &attr, const_cast<char* const*>(argv),
                        const_cast<char* const*>(envp.data()));
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(in_fd);
  close(pipe_fds[1]);
  if (err != 0) {
    close(pipe_fds[0]);
    return failed(lp::SolveStatus::kError, "cannot start the solve helper " + program + ": " + strerror(err), 0);
  }
  std::string text;
  bool timed_out = false, too_long = false;
  char buf[65536];
  while (true) {
    double left = limits.seconds_left - elapsed();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{pipe_fds[0], POLLIN, 0};
    int r = poll(&p, 1, int(std::ceil(left * 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;  // the loop head sees the deadline
    ssize_t got = read(pipe_fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    text.append(buf, size_t(got));
    if (text.size() > kMaxReplyBytes) {
      too_long = true;
      break;
    }
  }
  close(pipe_fds[0]);
  if (timed_out || too_long) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
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
    r.seconds = seconds;
    if (who && j.contains("helper") && j["helper"].is_object()) {
      const auto& h = j["helper"];
      who->pid = h.value("pid", 0L);
      who->uid = h.value("uid", -1L);
      who->exe = h.value("exe", std::string());
    }
    return r;
  } catch (const std::exception& e) {
    return failed(lp::SolveStatus::kError, std::string("the solve helper's reply is unreadable: ") + e.what(), seconds);
  }
}

}  // namespace trex::oreval
