#include "trex/dist/session.h"

#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace trex::dist {
namespace {

using Clock = std::chrono::steady_clock;

// The watchdog's state: when the current blocking wait began (0: none) and what it is.
std::atomic<int64_t> g_wait_since_ns{0};
std::atomic<const char*> g_wait_what{""};
std::atomic<double> g_timeout_s{600};
std::atomic<bool> g_stop{false};
std::atomic<int> g_rank{0};
std::thread g_watchdog;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

void watchdog_loop() {
  while (!g_stop.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    int64_t since = g_wait_since_ns.load();
    if (since == 0) continue;
    double waited = double(now_ns() - since) * 1e-9;
    if (waited > g_timeout_s.load()) {
      std::fprintf(stderr,
                   "trex: error: rank %d waited %.0f s in %s: a peer rank died or stalled "
                   "(timeout %.0f s: [parallel] timeout_s or TREX_DIST_TIMEOUT)\n",
                   g_rank.load(), waited, g_wait_what.load(), g_timeout_s.load());
      std::fflush(stderr);
      // Not MPI_Abort: this thread is not the one MPI was initialised for. mpirun sees a rank
      // end without MPI_Finalize and ends the rest of the job.
      ::_exit(3);
    }
  }
}

}  // namespace

bool Session::launched() {
  const char* s = std::getenv("OMPI_COMM_WORLD_SIZE");
  return s != nullptr && *s != 0;
}

int Session::local_ranks() {
  const char* s = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (!launched() || s == nullptr) return 1;
  int n = std::atoi(s);
  return n > 0 ? n : 1;
}

Session::Session() {
  if (const char* t = std::getenv("TREX_DIST_TIMEOUT"); t && *t) {
    double v = std::atof(t);
    if (v > 0) g_timeout_s = v;
  }
  if (!launched()) return;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  initialised_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_);
  g_rank = rank_;
  g_stop = false;
  g_watchdog = std::thread(watchdog_loop);
}

Session::~Session() {
  if (!initialised_) return;
  g_stop = true;
  if (g_watchdog.joinable()) g_watchdog.join();
  MPI_Finalize();
}

void Session::set_timeout(double seconds) {
  if (seconds > 0 && !(std::getenv("TREX_DIST_TIMEOUT") && *std::getenv("TREX_DIST_TIMEOUT"))) g_timeout_s = seconds;
}

double Session::timeout() const { return g_timeout_s.load(); }

void Session::abort(const std::string& message, int code) const {
  std::fprintf(stderr, "trex: error: rank %d: %s\n", rank_, message.c_str());
  std::fflush(stderr);
  if (initialised_) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

WatchdogScope::WatchdogScope(const char* what) {
  g_wait_what = what;
  g_wait_since_ns = now_ns();
}

WatchdogScope::~WatchdogScope() { g_wait_since_ns = 0; }

}  // namespace trex::dist
