// The forked solve helper; the threats and the limits are in solve_helper.h.
#include "trex/oreval/solve_helper.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "nlohmann/json.hpp"
#include "trex/oreval/close_fds.h"

namespace trex::oreval {

namespace {

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;
// A reply holds one value per variable; a model the file cap admits stays far below this.
constexpr size_t kMaxReplyBytes = size_t(256) << 20;

// The evaluator's present address-space size, so that the helper's limit adds to it.
size_t address_space_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long pages = 0;
  if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
  std::fclose(f);
  return size_t(pages) * size_t(sysconf(_SC_PAGESIZE));
}

lp::SolveStatus status_from_name(const std::string& name) {
  using S = lp::SolveStatus;
  for (S s : {S::kOptimal, S::kInfeasible, S::kUnbounded, S::kInfeasibleOrUnbounded, S::kTimeLimitFeasible,
              S::kTimeLimitNoSolution, S::kUnsupported, S::kError})
    if (name == lp::to_string(s)) return s;
  return S::kError;
}

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t w = write(fd, s.data() + done, s.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    done += size_t(w);
  }
}

[[noreturn]] void run_helper(const std::function<lp::Model()>& load, const std::string& solver, const HelperLimits& l,
                             int out_fd, size_t inherited_bytes) {
  nlohmann::json reply;
  int keep[2] = {out_fd, l.dir_fd};
  if (!close_fds_from(3, keep, l.dir_fd >= 0 ? 2 : 1)) _exit(120);
  rlimit as{rlim_t(inherited_bytes + l.memory_bytes), rlim_t(inherited_bytes + l.memory_bytes)};
  rlim_t cpu = rlim_t(std::ceil(std::max(0.0, l.seconds_left))) + 1;
  rlimit cpu_limit{cpu, cpu + 1};
  rlimit no_core{0, 0};
  if (setrlimit(RLIMIT_AS, &as) != 0 || setrlimit(RLIMIT_CPU, &cpu_limit) != 0 || setrlimit(RLIMIT_CORE, &no_core) != 0)
    _exit(121);
  if (geteuid() == 0 && (setgroups(0, nullptr) != 0 || setgid(kNogroup) != 0 || setuid(kNobody) != 0)) _exit(122);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(123);
  auto t0 = std::chrono::steady_clock::now();
  try {
    lp::Model m = load();
    lp::SolveOptions so;
    double used = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    so.time_limit_s = std::max(0.01, l.seconds_left - used);
    lp::SolveResult r = lp::make_solver(solver)->solve(m, so);
    reply = {{"status", lp::to_string(r.status)}, {"objective", r.objective}, {"x", r.x},
             {"message", r.message}, {"solver", r.solver}, {"solver_version", r.solver_version},
             {"seconds", r.seconds}, {"best_bound", r.best_bound}};
  } catch (const std::bad_alloc&) {
    reply = {{"status", "error"}, {"message", "the solve helper ran out of memory"}};
  } catch (const std::exception& e) {
    reply = {{"status", "error"}, {"message", e.what()}};
  }
  write_all(out_fd, reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  _exit(0);
}

lp::SolveResult failed(lp::SolveStatus status, const std::string& message, double seconds) {
  lp::SolveResult r;
  r.status = status;
  r.message = message;
  r.seconds = seconds;
  return r;
}

}  // namespace

lp::SolveResult solve_in_helper(const std::function<lp::Model()>& load, const std::string& solver,
                                const HelperLimits& limits) {
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  if (limits.seconds_left <= 0) return failed(lp::SolveStatus::kTimeLimitNoSolution, "no time left for the solve", 0);
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0)
    return failed(lp::SolveStatus::kError, std::string("solve helper: pipe: ") + strerror(errno), 0);
  size_t inherited = address_space_bytes();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return failed(lp::SolveStatus::kError, std::string("solve helper: fork: ") + strerror(e), 0);
  }
  if (pid == 0) {
    close(pipe_fds[0]);
    run_helper(load, solver, limits, pipe_fds[1], inherited);
  }
  close(pipe_fds[1]);
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
    return failed(lp::SolveStatus::kError, "the solve helper could not start (status " + std::to_string(WEXITSTATUS(status)) + ")",
                  seconds);
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
    return r;
  } catch (const std::exception& e) {
    return failed(lp::SolveStatus::kError, std::string("the solve helper's reply is unreadable: ") + e.what(), seconds);
  }
}

}  // namespace trex::oreval
