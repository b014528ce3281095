// A tiling problem as a 0-1 integer program, solved exactly with CBC through trex's lp layer.
//
// Each parameter p picks one value from its candidate list: binaries x[p][v] with
// sum_v x[p][v] = 1. The performance model enters as costs (seconds):
//   unary   c[p][v]               paid when p takes value v,
//   pair    c[(p,v),(q,w)]        paid when both hold, linearised with y >= x[p][v] + x[q][w] - 1,
//                                 y in [0, 1] (exact because every pair cost is >= 0 and minimised),
// and capacity limits as forbidden values (x[p][v] = 0) and forbidden pairs
// (x[p][v] + x[q][w] <= 1). Each cost belongs to a pipe: pipe -1 is serial (its costs add up),
// pipes 0..P-1 overlap (an out-of-order core runs them side by side), so the time is
//   T = sum of serial costs + max over pipes of the pipe's costs,
// linearised with one continuous t >= (costs of pipe p) for each p. The optimum of this program is the exact optimum of the model over
// the candidate grid; the model (not the solver) is the approximation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trex::aura {

struct ChoiceParam {
  std::string name;
  std::vector<int64_t> values;
  std::vector<double> cost;      // per value (seconds); empty: all 0
  std::vector<bool> forbidden;   // per value; empty: none
  std::vector<int> pipe;         // per value, the pipe of cost[v]; empty: all serial (-1)
  std::vector<double> serial;    // per value, a further serial cost; empty: none
};

struct ChoicePair {
  int p, v, q, w;  // parameter index and value index, twice
  double cost = 0;       // >= 0
  bool forbidden = false;
  int pipe = -1;
};

struct ChoiceProblem {
  std::vector<ChoiceParam> params;
  std::vector<ChoicePair> pairs;
  double constant = 0;  // serial cost paid by every configuration
  std::vector<std::string> pipes;            // names of the overlapping pipes
  std::vector<double> pipe_constant;         // per pipe, cost paid by every configuration
};

struct ChoiceSolution {
  bool feasible = false;
  std::vector<int> index;   // chosen value index per parameter
  double objective = 0;     // the model's cost of that choice, constant included
  int variables = 0, rows = 0;
  std::string solver;       // e.g. "cbc"
  std::string status;
};

// Builds the program and solves it with the "cbc" back end. Infeasible (every choice
// forbidden) gives feasible = false.
ChoiceSolution solve_choices(const ChoiceProblem& problem);

// The model's cost of a given choice (value index per parameter); +inf when forbidden.
double choice_cost(const ChoiceProblem& problem, const std::vector<int>& index);

}  // namespace trex::aura
