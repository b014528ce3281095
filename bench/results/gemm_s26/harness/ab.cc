// A/B harness: trex sgemm under several blockings and OpenBLAS, interleaved rounds, one process.
#include <cblas.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>
#include "trex/core/thread_pool.h"
#include "trex/kernels/gemm.h"
using namespace trex;
static double now(clockid_t c) { timespec t; clock_gettime(c, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
int main(int argc, char** argv) {
  if (argc < 6) { fprintf(stderr, "ab M N K threads rounds [cfg...] cfg = ob | kc,mc,nc,split (env TA TB BETA)\n"); return 2; }
  int64_t m = atol(argv[1]), n = atol(argv[2]), k = atol(argv[3]);
  int nt = atoi(argv[4]), rounds = atoi(argv[5]);
  bool ta = getenv("TA") && atoi(getenv("TA")), tb = getenv("TB") && atoi(getenv("TB"));
  float beta = getenv("BETA") ? atof(getenv("BETA")) : 0.0f;
  int64_t lda = ta ? m : k, ldb = tb ? k : n;
  int calls = getenv("CALLS") ? atoi(getenv("CALLS")) : 3;
  double settle = getenv("SETTLE") ? atof(getenv("SETTLE")) : 0.0;
  std::vector<std::string> cfgs;
  for (int i = 6; i < argc; ++i) cfgs.push_back(argv[i]);
  if (cfgs.empty()) cfgs = {"0,0,0,0", "ob"};
  std::vector<float> a(m * k), b(k * n), c(m * n);
  std::mt19937 rng(42); std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : a) v = u(rng); for (auto& v : b) v = u(rng);
  core::ThreadPool pool(nt);
  for (auto& s : cfgs) if (s == "ob") openblas_set_num_threads(nt);
  std::vector<kernels::GemmBlocking> gs;
  for (auto& s : cfgs) {
    kernels::GemmBlocking g = kernels::gemm_blocking();
    long kc, mc, nc, sp;
    if (s != "ob" && sscanf(s.c_str(), "%ld,%ld,%ld,%ld", &kc, &mc, &nc, &sp) == 4) {
      if (kc) g.kc = kc; if (mc) g.mc = mc / g.mr * g.mr; if (nc) g.nc = nc / g.nr * g.nr; g.split = sp;
    }
    gs.push_back(g);
  }
  std::vector<std::vector<double>> wall(cfgs.size()), cpu(cfgs.size());
  std::vector<std::vector<double>> ratio(cfgs.size());
  double flop = 2.0 * m * n * k;
  for (int r = -1; r < rounds; ++r) {
    std::vector<double> rw(cfgs.size());
    for (size_t j0 = 0; j0 < cfgs.size(); ++j0) {
      size_t j = (j0 + r + 1) % cfgs.size();  // rotate the order
      std::vector<double> w, cp;
      for (int i = 0; i < calls; ++i) {
        double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
        if (cfgs[j] == "ob")
          cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, beta, c.data(), n);
        else {
          kernels::GemmOptions o{&pool, &gs[j]};
          kernels::sgemm(ta ? kernels::Trans::kYes : kernels::Trans::kNo, tb ? kernels::Trans::kYes : kernels::Trans::kNo, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, beta, c.data(), n, o);
        }
        w.push_back(now(CLOCK_MONOTONIC) - t0); cp.push_back(now(CLOCK_PROCESS_CPUTIME_ID) - c0);
      }
      if (cfgs[j] == "ob" && settle > 0) usleep(useconds_t(settle * 1e6));
      if (r >= 0) { wall[j].push_back(med(w)); cpu[j].push_back(med(cp)); rw[j] = med(w); }
    }
    if (r >= 0) for (size_t j = 0; j < cfgs.size(); ++j) ratio[j].push_back(rw[0] / rw[j]);
  }
  for (size_t j = 0; j < cfgs.size(); ++j) {
    auto w = wall[j]; std::sort(w.begin(), w.end());
    auto rt = ratio[j]; std::sort(rt.begin(), rt.end());
    printf("%-16s wall GF/s med %.1f [%.1f..%.1f]  cpu-time GF/s/thread med %.1f  speed vs cfg0 med %.3f [%.3f..%.3f]\n",
           cfgs[j].c_str(), flop / med(wall[j]) / 1e9, flop / w.back() / 1e9, flop / w.front() / 1e9,
           flop / med(cpu[j]) / 1e9, med(ratio[j]), rt.front(), rt.back());
  }
}
