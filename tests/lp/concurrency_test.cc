// Hundreds of MILPs solved at once from many threads, every answer checked against an
// exact dynamic program: the lp layer must be safe to call concurrently.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "trex/lp/solver.h"

namespace trex::lp {
namespace {

struct Knapsack {
  std::vector<int> weight, value, copies;
  int capacity = 0;
};

Knapsack make_knapsack(unsigned seed) {
  std::mt19937 rng(seed);
  Knapsack k;
  int n = 8 + int(rng() % 10);
  for (int j = 0; j < n; ++j) {
    k.weight.push_back(3 + int(rng() % 30));
    k.value.push_back(1 + int(rng() % 50));
    k.copies.push_back(1 + int(rng() % 3));
  }
  k.capacity = 40 + int(rng() % 120);
  return k;
}

// Bounded knapsack by dynamic programming: the independent answer.
int best_value(const Knapsack& k) {
  std::vector<int> best(size_t(k.capacity) + 1, 0);
  for (size_t j = 0; j < k.weight.size(); ++j)
    for (int c = 0; c < k.copies[j]; ++c)
      for (int cap = k.capacity; cap >= k.weight[j]; --cap)
        best[size_t(cap)] = std::max(best[size_t(cap)], best[size_t(cap - k.weight[j])] + k.value[j]);
  return best[size_t(k.capacity)];
}

Model to_model(const Knapsack& k) {
  Model m;
  m.sense = Sense::kMaximize;
  std::vector<Term> row;
  for (size_t j = 0; j < k.weight.size(); ++j) {
    VarType type = k.copies[j] == 1 ? VarType::kBinary : VarType::kInteger;
    int x = m.add_var("x" + std::to_string(j), 0, k.copies[j], type, k.value[j]);
    row.push_back(Term{x, double(k.weight[j])});
  }
  m.add_le("capacity", row, k.capacity);
  return m;
}

TEST(Concurrency, HundredsOfMilpsFromEightThreadsAllCorrect) {
  constexpr int kModels = 400;
  constexpr int kThreads = 8;
  std::vector<Knapsack> problems;
  std::vector<int> expected;
  for (int i = 0; i < kModels; ++i) {
    problems.push_back(make_knapsack(unsigned(1000 + i)));
    expected.push_back(best_value(problems.back()));
  }
  std::vector<double> got(kModels, -1);
  std::vector<SolveStatus> status(kModels, SolveStatus::kError);
  std::atomic<int> next{0};
  auto solver = make_solver("cbc");  // one Solver object shared by all threads
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&] {
      for (int i; (i = next++) < kModels;) {
        SolveResult r = solver->solve(to_model(problems[size_t(i)]), {});
        status[size_t(i)] = r.status;
        got[size_t(i)] = r.objective;
      }
    });
  }
  for (auto& t : pool) t.join();
  for (int i = 0; i < kModels; ++i) {
    ASSERT_EQ(status[size_t(i)], SolveStatus::kOptimal) << "model " << i;
    EXPECT_NEAR(got[size_t(i)], expected[size_t(i)], 1e-6) << "model " << i;
  }
}

}  // namespace
}  // namespace trex::lp
