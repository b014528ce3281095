// Collective times on this machine against message size, fitted to latency + bytes / bandwidth:
// all-to-all (MPI_Ialltoallv + wait, as the MoE exchange runs it), all-reduce (MPI_Allreduce of
// floats) and all-gather (MPI_Allgather, as the step reducer runs it). Run under mpirun:
//   mpirun -n 2 --oversubscribe build/dist_bench [--out FILE] [--max-bytes N]
// Rank 0 prints a table and writes the fit as TOML ([dist_calibration], read by
// plan::load_dist_calibration) to FILE (default dist_calibration.toml), atomically.
// Message size = bytes each rank sends (all-to-all: split evenly over the peers), contributes
// (all-reduce) or contributes to the gathered whole (all-gather). Each point is the median of
// repetitions (5 to 50 by size); rank 0's clock, after a barrier per repetition.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "trex/dist/communicator.h"
#include "trex/dist/session.h"
#include "trex/util/atomic_file.h"

namespace {

using Clock = std::chrono::steady_clock;
using trex::dist::Communicator;

struct Point {
  double bytes, seconds;
};

// Fit t = a + bytes / bw minimising the relative error sum ((a + c bytes - t) / t)^2, c = 1 / bw.
std::pair<double, double> fit(const std::vector<Point>& pts) {
  double s00 = 0, s01 = 0, s11 = 0, r0 = 0, r1 = 0;
  for (const Point& p : pts) {
    double w = 1 / (p.seconds * p.seconds);
    s00 += w, s01 += w * p.bytes, s11 += w * p.bytes * p.bytes;
    r0 += w * p.seconds, r1 += w * p.bytes * p.seconds;
  }
  double det = s00 * s11 - s01 * s01;
  double a = (r0 * s11 - r1 * s01) / det, c = (s00 * r1 - s01 * r0) / det;
  return {std::max(a, 0.0), c > 0 ? 1 / c : INFINITY};
}

// The median over a repetition count that depends only on the size (every rank must run the
// same number of collectives), after two warm-up calls; a barrier before each.
template <class Fn>
double median_time(const Communicator& world, double bytes, const Fn& fn) {
  const int reps = int(std::clamp(64.0 * (1 << 20) / bytes, 5.0, 50.0));
  std::vector<double> t;
  for (int rep = 0; rep < 2; ++rep) fn();
  for (int rep = 0; rep < reps; ++rep) {
    world.barrier("bench");
    Clock::time_point t0 = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string out = "dist_calibration.toml";
  double max_bytes = 64.0 * (1 << 20);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) out = argv[++i];
    else if (a == "--max-bytes" && i + 1 < argc) max_bytes = std::atof(argv[++i]);
    else {
      std::fprintf(stderr, "usage: mpirun -n N dist_bench [--out FILE] [--max-bytes N]\n");
      return 2;
    }
  }
  trex::dist::Session session;
  if (session.world() < 2) {
    std::fprintf(stderr, "dist_bench: run under mpirun with at least 2 ranks\n");
    return 2;
  }
  session.set_timeout(600);
  Communicator world = Communicator::world();
  const int P = world.size();
  std::vector<Point> a2a, ar, ag;
  if (world.rank() == 0) std::printf("%12s %14s %14s %14s   (seconds, median; %d ranks)\n", "bytes/rank", "all-to-all", "all-reduce", "all-gather", P);
  for (double bytes = 4096; bytes <= max_bytes; bytes *= 4) {
    const int64_t n = int64_t(bytes / 4);
    const int64_t rows = n / P;  // all-to-all rows of one float to each peer
    std::vector<float> send(size_t(n), 1.f), recv(size_t(n) * size_t(P));
    std::vector<int64_t> counts(size_t(P), rows);
    double t_a2a = median_time(world, bytes, [&] {
      world.start_alltoallv(send.data(), counts.data(), recv.data(), counts.data(), 1);
      world.finish_alltoallv();
    });
    double t_ar = median_time(world, bytes, [&] { world.allreduce_sum(send.data(), n); });
    double t_ag = median_time(world, bytes, [&] { world.allgather(send.data(), n, recv.data()); });
    a2a.push_back({double(rows * P * 4), t_a2a});
    ar.push_back({bytes, t_ar});
    ag.push_back({bytes, t_ag});
    if (world.rank() == 0) {
      std::printf("%12.0f %14.3e %14.3e %14.3e\n", bytes, t_a2a, t_ar, t_ag);
      std::fflush(stdout);
    }
    std::fill(send.begin(), send.end(), 1.f);
  }
  if (world.rank() == 0) {
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    double load[3] = {0, 0, 0};
    getloadavg(load, 3);
    std::string toml =
        "# trex dist calibration: a collective takes latency_s + bytes / bandwidth_Bps (bytes per rank),\n"
        "# fitted by bench/dist_bench (relative least squares over 4 KiB.." +
        std::to_string(int64_t(max_bytes)) + " bytes). Read by plan::load_dist_calibration.\n"
        "[dist_calibration]\nranks = " + std::to_string(P) + "\nhost = \"" + host + "\"\nload = " +
        std::to_string(load[0]) + "\n";
    auto section = [&](const char* name, const std::vector<Point>& pts) {
      auto [lat, bw] = fit(pts);
      char buf[256];
      std::snprintf(buf, sizeof buf, "\n[dist_calibration.%s]\nlatency_s = %.4e\nbandwidth_Bps = %.4e\n", name, lat, bw);
      std::printf("%-11s latency %.2f us, bandwidth %.2f GB/s\n", name, lat * 1e6, bw / 1e9);
      toml += buf;
    };
    section("all_to_all", a2a);
    section("all_reduce", ar);
    section("all_gather", ag);
    trex::write_file_atomic(out, toml);
    std::printf("wrote %s (load %.2f)\n", out.c_str(), load[0]);
  }
  return 0;
}
