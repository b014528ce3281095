// CBC's deterministic parallel mode (Debian's CBC is built with threads): 1 and 4 threads
// give the same verdict, objective and point.
#include <gtest/gtest.h>

#include <random>

#include "trex/lp/solver.h"

namespace trex::lp {
namespace {

// A multi-dimensional knapsack of 40 binaries and 5 rows: enough search for the threads to
// share, small enough to stay well under a second.
Model knapsack(unsigned seed) {
  std::mt19937 rng(seed);
  Model m;
  m.sense = Sense::kMaximize;
  for (int j = 0; j < 40; ++j) m.add_var("x" + std::to_string(j), 0, 1, VarType::kBinary, 10 + rng() % 90);
  for (int r = 0; r < 5; ++r) {
    std::vector<Term> terms;
    double total = 0;
    for (int j = 0; j < 40; ++j) {
      double w = 5 + rng() % 60;
      total += w;
      terms.push_back(Term{j, w});
    }
    m.add_le("cap" + std::to_string(r), terms, std::floor(total / 3));
  }
  return m;
}

TEST(CbcThreads, OneAndFourThreadsGiveTheSameAnswer) {
  auto cbc = make_solver("cbc");
  for (unsigned seed : {1u, 2u, 3u}) {
    Model m = knapsack(seed);
    SolveOptions one, four;
    four.threads = 4;
    SolveResult a = cbc->solve(m, one), b = cbc->solve(m, four);
    ASSERT_EQ(a.status, SolveStatus::kOptimal) << a.message;
    ASSERT_EQ(b.status, SolveStatus::kOptimal) << b.message;
    EXPECT_EQ(a.objective, b.objective) << "seed " << seed;
    // Deterministic mode: the same run gives the same point.
    SolveResult c = cbc->solve(m, four);
    EXPECT_EQ(b.x, c.x) << "seed " << seed;
  }
}

}  // namespace
}  // namespace trex::lp
