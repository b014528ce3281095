// Softmax cross-entropy: fused vs the eager chain (fp32 and bf16 logits, ignored rows, in-place
// gradient), gating (NaN-poisoned outputs, inputs unchanged), finite differences of the fused
// gradient, bit-identical results for 1, 2 and 3 threads, and on every vector path (AVX2,
// AVX-512, the streaming stores of a large gradient).
//
// Tolerances (atol = rtol): loss 1e-4 in fp32 (summation order only) and 1e-3 with bf16 logits
// (both read the same bf16 values; the loss is fp32 in both, but the lse of a 4097-wide row sums
// terms in a different order); gradient 1e-4 fp32, 1e-2 bf16 (one bf16 ulp is 2^-8 relative).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "grad_check.h"
#include "kernel_test_util.h"
#include "trex/core/arena.h"
#include "trex/core/thread_pool.h"
#include "trex/kernels/cross_entropy.h"
#include "trex/kernels/row_isa.h"

namespace trex::kernels {
namespace {

using namespace test_util;  // NOLINT: shared test helpers

struct CeShape {
  int64_t rows, vocab;
};
const CeShape kShapes[] = {{1, 1}, {3, 7}, {5, 33}, {4, 1000}, {2, 4097}, {17, 8}};

std::vector<int32_t> random_targets(int64_t rows, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    t[size_t(r)] = (r % 4 == 3) ? -1 : int32_t(rng() % uint32_t(vocab));  // every 4th ignored
  return t;
}

template <class T>
void check_against_ref(double loss_tol, double grad_tol) {
  core::ThreadPool pool(2);
  uint32_t seed = 11;
  for (const CeShape& s : kShapes) {
    for (int dist = 0; dist < 4; ++dist, ++seed) {
      std::string tag = "[" + std::to_string(s.rows) + ", " + std::to_string(s.vocab) +
                        "] dist " + std::to_string(dist);
      int64_t n = s.rows * s.vocab;
      auto x = random_vec<T>(n, seed, dist, 3.f);
      auto tg = random_targets(s.rows, s.vocab, seed + 7);
      auto x0 = x;
      auto tg0 = tg;
      std::vector<float> loss(static_cast<size_t>(s.rows), NAN), lossr(static_cast<size_t>(s.rows), NAN);
      std::vector<T> dx(static_cast<size_t>(n), nan_value<T>()), dxr(static_cast<size_t>(n), nan_value<T>());
      float scale = 1.f / float(s.rows);
      cross_entropy_forward_backward(x.data(), tg.data(), loss.data(), dx.data(), s.rows, s.vocab,
                                     scale, &pool);
      cross_entropy_forward_backward_ref(x.data(), tg.data(), lossr.data(), dxr.data(), s.rows,
                                         s.vocab, scale, &pool);
      EXPECT_TRUE(same_bytes(x, x0) && same_bytes(tg, tg0)) << tag << ": an input changed";
      for (size_t i = 0; i < dx.size(); ++i)
        ASSERT_FALSE(std::isnan(val(dx[i]))) << tag << " dlogits[" << i << "] not written";
      expect_close(loss, lossr, loss_tol, tag + " loss");
      expect_close(dx, dxr, grad_tol, tag + " dlogits");
      // In place: the gradient overwrites the logits and equals the out-of-place one.
      auto xi = x;
      std::vector<float> lossi(static_cast<size_t>(s.rows), NAN);
      cross_entropy_forward_backward(xi.data(), tg.data(), lossi.data(), xi.data(), s.rows,
                                     s.vocab, scale, &pool);
      EXPECT_TRUE(same_bytes(xi, dx) && same_bytes(lossi, loss)) << tag << ": in place differs";
    }
  }
}

TEST(CrossEntropy, F32MatchesReference) { check_against_ref<float>(1e-4, 1e-4); }
TEST(CrossEntropy, Bf16MatchesReference) { check_against_ref<core::bf16>(1e-3, 1e-2); }

TEST(CrossEntropy, GradientMatchesFiniteDifferences) {
  core::ThreadPool pool(2);
  for (CeShape s : {CeShape{3, 7}, CeShape{2, 130}}) {
    int64_t n = s.rows * s.vocab;
    auto x = random_vec<float>(n, 5, 0, 2.f);
    auto tg = random_targets(s.rows, s.vocab, 6);
    std::vector<float> loss(static_cast<size_t>(s.rows)), dx(static_cast<size_t>(n));
    float scale = 0.7f;
    cross_entropy_forward_backward(x.data(), tg.data(), loss.data(), dx.data(), s.rows, s.vocab,
                                   scale, &pool);
    auto total = [&] {
      std::vector<float> l(static_cast<size_t>(s.rows));
      cross_entropy_forward_backward<float>(x.data(), tg.data(), l.data(), nullptr, s.rows,
                                            s.vocab, scale, &pool);
      double sum = 0;
      for (float v : l) sum += double(v) * scale;
      return sum;
    };
    expect_grad_matches_fd("dlogits", x.data(), n, dx.data(), total);
  }
}

// The 16-lane path feeds the 8-lane path's sums in the same order and its exps are the same
// polynomial lane for lane: every path gives the same bytes, also in place (vocabularies with
// tails of 1-15 and 8 + 1-7 logits after the 16-lane steps).
template <class T>
void check_paths_agree(int64_t rows, int64_t vocab) {
  core::ThreadPool pool(2);
  const int64_t n = rows * vocab;
  auto xs = random_vec<T>(n, 71, 1, 4.f);
  auto tg = random_targets(rows, vocab, 72);
  // 32-byte aligned buffers: a large gradient (>= 8 MiB) is streamed on the 16-lane path.
  auto x = core::aligned_array<T>(size_t(n)), d = core::aligned_array<T>(size_t(n));
  std::copy(xs.begin(), xs.end(), x.get());
  std::vector<float> l0;
  std::vector<T> d0;
  for (core::Isa isa : row_isas()) {
    ScopedRowIsa path(isa);
    SCOPED_TRACE(core::to_string(isa));
    std::vector<float> l(static_cast<size_t>(rows), NAN);
    std::fill(d.get(), d.get() + n, nan_value<T>());
    cross_entropy_forward_backward(x.get(), tg.data(), l.data(), d.get(), rows, vocab, 0.25f, &pool);
    std::vector<T> dv(d.get(), d.get() + n);
    for (size_t i = 0; i < dv.size(); ++i) ASSERT_FALSE(std::isnan(val(dv[i]))) << "dlogits[" << i << "]";
    // In place on the same path: the same bytes.
    std::vector<T> xi = xs;
    std::vector<float> li(static_cast<size_t>(rows), NAN);
    cross_entropy_forward_backward(xi.data(), tg.data(), li.data(), xi.data(), rows, vocab, 0.25f, &pool);
    EXPECT_TRUE(same_bytes(xi, dv) && same_bytes(li, l)) << "in place differs";
    if (l0.empty()) {
      l0 = l;
      d0 = dv;
    } else {
      EXPECT_TRUE(same_bytes(l, l0)) << "loss differs from the first path";
      EXPECT_TRUE(same_bytes(dv, d0)) << "dlogits differ from the first path";
    }
  }
}

TEST(CrossEntropy, VectorPathsGiveSameBits) {
  for (int64_t vocab : {int64_t(1), int64_t(7), int64_t(8), int64_t(15), int64_t(16), int64_t(23),
                        int64_t(31), int64_t(33), int64_t(1000), int64_t(4097)}) {
    SCOPED_TRACE("vocab " + std::to_string(vocab));
    check_paths_agree<float>(5, vocab);
    check_paths_agree<core::bf16>(5, vocab);
  }
}

// 72 rows of 32768 fp32 logits (9 MiB): the 16-lane path streams the gradient.
TEST(CrossEntropy, StreamingGradientSameBits) {
  check_paths_agree<float>(72, 32768);
  check_paths_agree<core::bf16>(144, 32768);
}

// fp32 rows are pipelined per thread on AVX-512 (a row's gradient written during the thread's
// next row): which rows pair up depends on the thread count, the bytes must not.
template <class T>
void check_thread_counts(int64_t rows, int64_t vocab, std::vector<int32_t> tg = {}) {
  auto x = random_vec<T>(rows * vocab, 9, 2);
  if (tg.empty()) tg = random_targets(rows, vocab, 10);
  std::vector<float> l1;
  std::vector<T> d1;
  for (int threads : {1, 2, 3}) {
    core::ThreadPool pool(threads);
    std::vector<float> l(static_cast<size_t>(rows));
    std::vector<T> d(static_cast<size_t>(rows * vocab));
    cross_entropy_forward_backward(x.data(), tg.data(), l.data(), d.data(), rows, vocab, 0.1f,
                                   &pool);
    if (threads == 1) {
      l1 = l;
      d1 = d;
    } else {
      EXPECT_TRUE(same_bytes(l, l1) && same_bytes(d, d1)) << threads << " threads";
    }
  }
}

TEST(CrossEntropy, DeterministicAcrossThreadCounts) {
  check_thread_counts<core::bf16>(37, 3001);
  check_thread_counts<float>(37, 3001);
  check_thread_counts<float>(9, 20000);  // a block of 1 row each (the built-in 16384 elements)
  // As many blocks as threads or fewer (thread t starts on block t; a third thread has none).
  check_thread_counts<float>(2, 32768);
  check_thread_counts<float>(4, 32768);
  check_paths_agree<float>(2, 32768);
}

// A thread requests the lines of the next row it reads, skipping ignored rows (never read): runs
// of ignored rows at the start, inside and at the end of blocks (20000 logits: blocks of one row;
// 3001: of five), and every row ignored. Against the eager reference and across thread counts.
TEST(CrossEntropy, RunsOfIgnoredRows) {
  for (int64_t vocab : {int64_t(20000), int64_t(3001)}) {
    SCOPED_TRACE("vocab " + std::to_string(vocab));
    const int64_t rows = 23;
    std::vector<int32_t> tg(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      const bool ignored = r < 3 || (r >= 7 && r <= 11) || r == 14 || r >= 19;
      tg[size_t(r)] = ignored ? -1 : int32_t((r * 7919) % vocab);
    }
    check_thread_counts<float>(rows, vocab, tg);
    check_thread_counts<float>(rows, vocab, std::vector<int32_t>(size_t(rows), -1));
    core::ThreadPool pool(2);
    auto x = random_vec<float>(rows * vocab, 13, 1, 3.f);
    std::vector<float> l(size_t(rows), NAN), lr(size_t(rows), NAN);
    std::vector<float> d(size_t(rows * vocab), NAN), dr(size_t(rows * vocab), NAN);
    cross_entropy_forward_backward(x.data(), tg.data(), l.data(), d.data(), rows, vocab, 0.5f, &pool);
    cross_entropy_forward_backward_ref(x.data(), tg.data(), lr.data(), dr.data(), rows, vocab, 0.5f, &pool);
    expect_close(l, lr, 1e-4, "loss");
    expect_close(d, dr, 1e-4, "dlogits");
  }
}

}  // namespace
}  // namespace trex::kernels
