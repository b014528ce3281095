#include <cblas.h>
#include <time.h>
#include <unistd.h>
#include <cstdio>
#include <vector>
static double cpu() { timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main() {
  int n = 1024; std::vector<float> a(n * n, 1), b(n * n, 1), c(n * n);
  openblas_set_num_threads(2);
  for (int r = 0; r < 4; ++r) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a.data(), n, b.data(), n, 0, c.data(), n);
    double c0 = cpu(); usleep(50000); double c1 = cpu(); usleep(150000); double c2 = cpu();
    printf("CPU time burnt while the caller sleeps: first 50 ms %.1f ms, next 150 ms %.1f ms\n", (c1 - c0) * 1e3, (c2 - c1) * 1e3);
  }
}
