// Finite-difference checking for the kernel tests: central differences of a scalar loss (computed
// in double from an fp32 forward) against an analytic gradient, on a strided sample of elements.
//
// Step and tolerance: h = 1e-2 max(1, |p|). The truncation error of a central difference is
// ~h^2 |f'''| / 6 ~ 2e-5; the fp32 forward rounds each output by ~6e-8 relative, which the
// division by 2h magnifies to ~1e-5 for losses of a few hundred O(1) terms. A tolerance of
// atol + rtol |fd| with atol = rtol = 2e-3 (the callers may pass their own) leaves a 20x margin
// while any wrong term of a gradient formula (a missing factor or sign) is off by O(1).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace trex::kernels::test_util {

// loss(): the scalar whose gradient in p[0..n) is grad. At most max_checks elements are checked,
// evenly strided (the first and last always). step: the relative step h / max(1, |p|) (smaller
// for functions with kinks, such as ReLU, so that a step rarely crosses one).
inline void expect_grad_matches_fd(const std::string& what, float* p, int64_t n, const float* grad,
                                   const std::function<double()>& loss, double tol = 2e-3,
                                   int64_t max_checks = 48, float step = 1e-2f) {
  if (n <= 0) return;
  int64_t checks = std::min(n, max_checks);
  int bad = 0;
  for (int64_t c = 0; c < checks; ++c) {
    int64_t i = checks == 1 ? 0 : c * (n - 1) / (checks - 1);
    float keep = p[i];
    float h = step * std::max(1.f, std::fabs(keep));
    p[i] = keep + h;
    double lp = loss();
    p[i] = keep - h;
    double lm = loss();
    p[i] = keep;
    double fd = (lp - lm) / (double(keep + h) - double(keep - h));  // the step fp32 really took
    if (!(std::fabs(fd - grad[i]) <= tol + tol * std::fabs(fd))) {
      if (bad++ < 4) ADD_FAILURE() << what << " [" << i << "]: analytic " << grad[i] << " fd " << fd;
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

// sum(w * y) in double: the loss whose gradient in y is w (the "upstream gradient" of a test).
template <class T, class F>
double weighted_sum(const std::vector<T>& y, const std::vector<float>& w, F to_float) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += double(w[i]) * double(to_float(y[i]));
  return s;
}

}  // namespace trex::kernels::test_util
