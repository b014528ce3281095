#include "trex/dist/request_wait.h"

#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace trex::dist {
namespace {

bool spin() {
  static const bool s = [] {
    const char* v = std::getenv("TREX_DIST_SPIN");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return s;
}

}  // namespace

void wait_requests(int n, MPI_Request* requests) {
  if (n == 0) return;
  if (spin()) {
    if (MPI_Waitall(n, requests, MPI_STATUSES_IGNORE) != MPI_SUCCESS) throw std::runtime_error("MPI: MPI_Waitall failed");
    return;
  }
  wait_until([&] {
    int done = 0;
    if (MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
      throw std::runtime_error("MPI: MPI_Testall failed");
    return done != 0;
  });
}

void wait_until(const std::function<bool()>& ready) {
  long sleep_ns = 20000;
  while (!ready()) {
    if (spin()) continue;
    timespec ts{0, sleep_ns};
    nanosleep(&ts, nullptr);
    sleep_ns = std::min(2 * sleep_ns, 200000L);
  }
}

}  // namespace trex::dist
