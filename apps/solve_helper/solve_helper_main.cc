// trex-solve-helper: parses and solves one model for the evaluator, in a process of its own.
//
//   trex-solve-helper SOLVER DEADLINE MEMORY_BYTES record|model FILE  < input  > reply
//
// The evaluator starts it with posix_spawn for every solve (src/trex/oreval/solve_helper.h has
// the threats and why it is a program of its own). The input is hostile, so every limit is in
// place before its first byte is read: other descriptors closed, address space (this process's
// size now plus MEMORY_BYTES; under ASan that size includes the shadow), CPU time, no core,
// user nobody when started as root, no_new_privs. Then stdin is parsed as a gurobipy record
// (model_json.h, errors naming FILE) or an exact model (model_wire.h) and solved within what is
// left until DEADLINE (seconds on CLOCK_MONOTONIC, which the evaluator reads too: this
// program's start-up counts against the solve), less a margin for the solver's overshoot and
// the reply; the reply is one JSON object on stdout. A failed setup step exits 120-124
// without a reply (solve_helper.cc names them).
#include <grp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <exception>

#include "nlohmann/json.hpp"
#include "trex/lp/solver.h"
#include "trex/oreval/close_fds.h"
#include "trex/oreval/model_json.h"
#include "trex/oreval/model_wire.h"
#include "trex/oreval/solve_helper.h"
#include "trex/util/error.h"

namespace {

constexpr uid_t kHelperNobody = 65534;
constexpr gid_t kHelperNogroup = 65534;

size_t own_address_space_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long pages = 0;
  if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
  std::fclose(f);
  return size_t(pages) * size_t(sysconf(_SC_PAGESIZE));
}

bool parse_double(const char* s, double& out) {
  char* end = nullptr;
  errno = 0;
  out = std::strtod(s, &end);
  return errno == 0 && end != s && *end == '\0' && std::isfinite(out);
}

bool parse_size(const char* s, size_t& out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  out = size_t(v);
  return errno == 0 && end != s && *end == '\0' && s[0] != '-';
}

void write_all(int fd, std::string_view s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t w = write(fd, s.data() + done, s.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    done += size_t(w);
  }
}

std::string read_all(int fd) {
  std::string s;
  char buf[65536];
  while (true) {
    ssize_t got = read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw std::runtime_error(std::string("reading the input: ") + strerror(errno));
    if (got == 0) return s;
    s.append(buf, size_t(got));
  }
}

std::string exe_basename() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  buf[n] = '\0';
  const char* slash = std::strrchr(buf, '/');
  return slash ? slash + 1 : buf;
}

// A std::bad_alloc can also end in std::terminate: nlohmann::json's destructor allocates (an
// explicit stack instead of recursion) while it unwinds from a failed parse, and so can a
// solver's noexcept path. Out of memory is then still the answer, written without allocating.
[[noreturn]] void on_terminate() {
  static const char kOutOfMemory[] = R"({"status":"error","message":"the solve helper ran out of memory"})";
  bool out_of_memory = false;
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::bad_alloc&) {
      out_of_memory = true;
    } catch (...) {
    }
  }
  if (out_of_memory) {
    write_all(1, std::string_view(kOutOfMemory, sizeof kOutOfMemory - 1));
    _exit(0);
  }
  std::abort();
}

double monotonic_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  std::set_terminate(on_terminate);
  if (!trex::oreval::close_fds_from(3, nullptr, 0)) _exit(120);
  double deadline = 0;
  size_t memory = 0;
  if (argc != 6 || !parse_double(argv[2], deadline) || !parse_size(argv[3], memory) ||
      (std::strcmp(argv[4], "record") != 0 && std::strcmp(argv[4], "model") != 0))
    _exit(124);
  std::string solver = argv[1], kind = argv[4], file = argv[5];
  std::string exe = exe_basename();
  size_t as_bytes = own_address_space_bytes() + memory;
  rlimit as{rlim_t(as_bytes), rlim_t(as_bytes)};
  // CPU time never passes wall time here (one thread): the limit only has to outlast the moment
  // the evaluator kills this process.
  double left = std::max(0.0, deadline - monotonic_seconds());
  rlim_t cpu = rlim_t(std::ceil(left + trex::oreval::solve_helper_grace_s(left))) + 1;
  rlimit cpu_limit{cpu, cpu + 1};
  rlimit no_core{0, 0};
  if (setrlimit(RLIMIT_AS, &as) != 0 || setrlimit(RLIMIT_CPU, &cpu_limit) != 0 || setrlimit(RLIMIT_CORE, &no_core) != 0)
    _exit(121);
  if (geteuid() == 0 &&
      (setgroups(0, nullptr) != 0 || setgid(kHelperNogroup) != 0 || setuid(kHelperNobody) != 0))
    _exit(122);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(123);

  nlohmann::json reply;
  try {
    std::string bytes = read_all(0);
    trex::lp::Model m;
    if (kind == "record") {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(bytes);
      } catch (const nlohmann::json::parse_error& e) {
        throw trex::InputError(file, 0, std::string("malformed model JSON: ") + e.what());
      }
      bytes.clear();
      bytes.shrink_to_fit();
      m = trex::oreval::model_from_json(j, file);
    } else {
      m = trex::oreval::model_from_wire(bytes, file);
    }
    trex::lp::SolveOptions so;
    // Stop short of the deadline by 10% of what is left (at most 0.25 s): CBC overshoots its
    // limit a little, and the reply still has to be written and read before the deadline.
    double remaining = deadline - monotonic_seconds();
    so.time_limit_s = std::max(0.01, remaining - std::min(0.1 * remaining, 0.25));
    trex::lp::SolveResult r = trex::lp::make_solver(solver)->solve(m, so);
    reply = {{"status", trex::lp::to_string(r.status)}, {"objective", r.objective}, {"x", r.x},
             {"message", r.message}, {"solver", r.solver}, {"solver_version", r.solver_version},
             {"seconds", r.seconds}, {"best_bound", r.best_bound}};
    // Duals only where the back end computed them (an LP solved to optimality).
    if (!r.duals.empty()) reply["duals"] = r.duals;
    if (!r.reduced_costs.empty()) reply["reduced_costs"] = r.reduced_costs;
  } catch (const std::bad_alloc&) {
    reply = {{"status", "error"}, {"message", "the solve helper ran out of memory"}};
  } catch (const std::exception& e) {
    reply = {{"status", "error"}, {"message", e.what()}};
  }
  reply["helper"] = {{"pid", long(getpid())}, {"uid", long(getuid())}, {"exe", exe}};
  write_all(1, reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  // No exit handlers: nothing of the solver's teardown (or a leak check of an uninstrumented
  // library's allocations under ASan) can turn a written reply into a failure.
  _exit(0);
}
