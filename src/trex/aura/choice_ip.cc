// Building and solving the 0-1 program of choice_ip.h.
#include "trex/aura/choice_ip.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "trex/lp/model.h"
#include "trex/lp/solver.h"

namespace trex::aura {

ChoiceSolution solve_choices(const ChoiceProblem& pr) {
  lp::Model m;
  m.name = "aura_tiling";
  const size_t np = pr.pipes.size();
  // The program is solved in microseconds: the models' costs are seconds, a GEMM's whole time a
  // few hundredths, and its per-call terms differ by microseconds, which in seconds sit under
  // CBC's absolute tolerances (1e-6 .. 1e-7): CBC returned a choice 3e-4 above the optimum
  // (session 16, 2048 x 256 x 4096 on the test machine). s.objective is recomputed in seconds.
  constexpr double kScale = 1e6;
  // Terms of each pipe's time row (t_p - sum costs >= constant).
  std::vector<std::vector<lp::Term>> pipe_terms(np);
  auto charge = [&](int pipe, int var, double cost_s, std::vector<lp::Term>& serial) {
    if (cost_s == 0) return;
    const double cost = cost_s * kScale;
    if (pipe < 0 || size_t(pipe) >= np) serial.push_back({var, cost});
    else pipe_terms[size_t(pipe)].push_back({var, -cost});
  };
  std::vector<lp::Term> serial;  // objective terms
  std::vector<std::vector<int>> x(pr.params.size());
  for (size_t p = 0; p < pr.params.size(); ++p) {
    const ChoiceParam& cp = pr.params[p];
    std::vector<lp::Term> one;
    for (size_t v = 0; v < cp.values.size(); ++v) {
      bool banned = !cp.forbidden.empty() && cp.forbidden[v];
      int j = m.add_var("x_" + cp.name + "_" + std::to_string(cp.values[v]), 0, banned ? 0 : 1,
                        lp::VarType::kBinary);
      x[p].push_back(j);
      one.push_back({j, 1});
      if (!cp.cost.empty()) charge(cp.pipe.empty() ? -1 : cp.pipe[v], j, cp.cost[v], serial);
      if (!cp.serial.empty()) charge(-1, j, cp.serial[v], serial);
    }
    m.add_eq("one_" + cp.name, one, 1);
  }
  int k = 0;
  for (const ChoicePair& pp : pr.pairs) {
    int a = x[size_t(pp.p)][size_t(pp.v)], b = x[size_t(pp.q)][size_t(pp.w)];
    if (pp.forbidden) {
      m.add_le("pair" + std::to_string(k++), {{a, 1}, {b, 1}}, 1);
    } else if (pp.cost > 0) {
      int y = m.add_var("y" + std::to_string(k), 0, 1);
      m.add_ge("link" + std::to_string(k++), {{y, 1}, {a, -1}, {b, -1}}, -1);
      charge(pp.pipe, y, pp.cost, serial);
    }
  }
  for (const lp::Term& t : serial) m.set_cost(t.var, m.var(t.var).cost + t.coef);
  for (size_t p = 0; p < np; ++p) {
    int t = m.add_var("t_" + pr.pipes[p], 0, lp::kInf, lp::VarType::kContinuous, 0);
    std::vector<lp::Term> row = pipe_terms[p];
    row.push_back({t, 1});
    double c = p < pr.pipe_constant.size() ? pr.pipe_constant[p] * kScale : 0;
    m.add_ge("pipe_" + pr.pipes[p], row, c);
  }
  // One bound variable T >= every t_p carries the max into the objective.
  if (np > 0) {
    int tmax = m.add_var("t_max", 0, lp::kInf, lp::VarType::kContinuous, 1);
    for (size_t p = 0; p < np; ++p)
      m.add_ge("max_" + pr.pipes[p], {{tmax, 1}, {m.find_var("t_" + pr.pipes[p]), -1}}, 0);
  }
  m.objective_constant = pr.constant * kScale;
  lp::SolveResult r = lp::make_solver("cbc")->solve(m, lp::SolveOptions{});
  ChoiceSolution s;
  s.variables = m.num_vars();
  s.rows = m.num_rows();
  s.solver = r.solver;
  s.status = lp::to_string(r.status);
  if (r.status != lp::SolveStatus::kOptimal) return s;
  s.feasible = true;
  for (size_t p = 0; p < pr.params.size(); ++p) {
    int best = 0;
    for (size_t v = 0; v < x[p].size(); ++v)
      if (r.x[size_t(x[p][v])] > r.x[size_t(x[p][size_t(best)])]) best = int(v);
    s.index.push_back(best);
  }
  s.objective = choice_cost(pr, s.index);
  return s;
}

double choice_cost(const ChoiceProblem& pr, const std::vector<int>& index) {
  const double inf = std::numeric_limits<double>::infinity();
  double serial = pr.constant;
  std::vector<double> pipe(pr.pipes.size(), 0);
  for (size_t p = 0; p < pipe.size() && p < pr.pipe_constant.size(); ++p) pipe[p] = pr.pipe_constant[p];
  auto add = [&](int pi, double c) {
    if (pi < 0 || size_t(pi) >= pipe.size()) serial += c;
    else pipe[size_t(pi)] += c;
  };
  for (size_t p = 0; p < pr.params.size(); ++p) {
    const ChoiceParam& cp = pr.params[p];
    size_t v = size_t(index[p]);
    if (!cp.forbidden.empty() && cp.forbidden[v]) return inf;
    if (!cp.cost.empty()) add(cp.pipe.empty() ? -1 : cp.pipe[v], cp.cost[v]);
    if (!cp.serial.empty()) add(-1, cp.serial[v]);
  }
  for (const ChoicePair& pp : pr.pairs) {
    if (index[size_t(pp.p)] != pp.v || index[size_t(pp.q)] != pp.w) continue;
    if (pp.forbidden) return inf;
    add(pp.pipe, pp.cost);
  }
  double mx = 0;
  for (double t : pipe) mx = std::max(mx, t);
  return serial + mx;
}

}  // namespace trex::aura
