// "sbb": a global solver for nonconvex quadratic models (quadratic objective and/or quadratic
// rows, continuous and integer variables) by spatial branch-and-bound.
//
// Each node is a box of variable bounds. Its lower bound is the LP relaxation of mccormick.h
// over the box, solved by CLP in-process; integer variables are branched on (floor / ceil) while
// fractional, then the variable that carries the most McCormick violation |w - x_i x_j| (weighted
// by its share of the root box) is split at its relaxation value, kept away from the box's ends.
// Nodes are taken best bound first. Upper bounds come from the relaxation points themselves
// (integers rounded), from dives that fix the most violated variable at its value until the
// relaxation is exact, and from an alternating-LP local search: fixing all but an independent
// set of the product graph leaves an LP whose optimum is a true point of the model.
//
// Every variable in a product needs finite bounds. Missing ones come from optimization-based
// bound tightening on the linear rows (min and max of x_j by LP); a second round with the
// envelopes and an objective cutoff shrinks the root box further before the search.
//
// A MILP without quadratic terms goes to CBC whole: this search has no cuts or presolve, and
// spatial branching adds nothing to a linear model. A pure LP is solved here (one node).
//
// The objective reported is always the model's own objective at the incumbent point, and every
// accepted point passes model.max_violation(x) <= 1e-6, so no answer rests on the relaxation.
// The search is single-threaded and deterministic; nothing is shared between calls.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "coin/ClpSimplex.hpp"
#include "trex/lp/mccormick.h"
#include "trex/lp/solver.h"

namespace trex::lp {

namespace {

using Clock = std::chrono::steady_clock;

constexpr double kFeasibilityTolerance = 1e-6;  // largest model.max_violation accepted
constexpr double kIntegralityTolerance = 1e-6;
constexpr int kCutRounds = 10;           // tangent-cut re-solves per node
constexpr double kBranchMargin = 0.1;    // a split stays this share of the width inside the box
constexpr double kBoundSlack = 1e-12;    // relative widening of an LP-derived bound (round-off)
constexpr int kImproveRounds = 20;       // alternating-LP sweeps per local search
constexpr int kDiveEvery = 50;           // nodes between dives (the root always dives)

struct Box {
  std::vector<double> lo, hi;
};

struct BoundChange {
  int var;
  double lo, hi;
};

// A box as the changes from the root box along its path: cheap to hold by the thousand.
struct Node {
  double bound;
  int64_t id;
  std::vector<BoundChange> changes;
};

// Best bound first; ties by creation order, so the search is deterministic.
struct WorseNode {
  bool operator()(const Node& a, const Node& b) const {
    return a.bound != b.bound ? a.bound > b.bound : a.id > b.id;
  }
};

enum class LpStatus { kOptimal, kInfeasible, kUnbounded, kFailed };

struct LpResult {
  LpStatus status = LpStatus::kFailed;
  double value = 0;         // minimized, constant included
  std::vector<double> col;  // x then w
};

// Children [lo, down_hi] and [up_lo, hi] of `var`.
struct Branch {
  int var = -1;
  double down_hi = 0, up_lo = 0;
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Solves with the dual simplex; after rows are added, CLP starts from the previous basis.
LpStatus run_clp(ClpSimplex& clp) {
  clp.dual();
  int s = clp.status();
  if (s == 0) return LpStatus::kOptimal;
  // CLP 1.17's simplex codes, dual and primal alike, call some unbounded LPs infeasible (seen
  // on a feasible LP whose unbounded column is in no row). The question "is there any point"
  // is answered reliably with a zero objective, so a negative verdict is decided on that,
  // in a fresh copy of the problem.
  ClpSimplex feasibility;
  feasibility.setLogLevel(0);
  std::vector<double> zeros(size_t(clp.numberColumns()), 0.0);
  feasibility.loadProblem(*clp.matrix(), clp.columnLower(), clp.columnUpper(), zeros.data(),
                          clp.rowLower(), clp.rowUpper());
  feasibility.setMaximumSeconds(clp.maximumSeconds());
  feasibility.dual();
  int f = feasibility.status();
  if (f == 1) return LpStatus::kInfeasible;
  if (f != 0) return s == 1 ? LpStatus::kInfeasible : LpStatus::kFailed;
  // A point exists: the primal simplex goes on from it with the real objective, so it
  // never has to search for feasibility again and its verdict on boundedness holds.
  feasibility.chgObjCoefficients(clp.objective());
  feasibility.setOptimizationDirection(clp.optimizationDirection());
  feasibility.primal();
  switch (feasibility.status()) {
    case 0:
      clp = feasibility;
      return LpStatus::kOptimal;
    case 2: return LpStatus::kUnbounded;
    default: return LpStatus::kFailed;
  }
}

class Search {
 public:
  Search(const Model& model, const SolveOptions& options, bool zero_objective,
         Clock::time_point deadline, int64_t node_cap)
      : model_(model),
        options_(options),
        relax_(model, zero_objective),
        zero_objective_(zero_objective),
        deadline_(deadline),
        node_cap_(node_cap),
        rel_gap_(options.mip_rel_gap >= 0 ? options.mip_rel_gap : 1e-9) {
    for (int j = 0; j < model.num_vars(); ++j)
      if (model.var(j).type != VarType::kContinuous) integers_.push_back(j);
    colour_free_sets();
  }

  SolveResult run();

 private:
  bool is_integer(int j) const { return model_.var(j).type != VarType::kContinuous; }
  bool out_of_time() const { return Clock::now() >= deadline_; }
  double gap(double v) const { return rel_gap_ * std::max(1.0, std::fabs(v)) + 1e-9; }
  bool pruned(double bound) const {
    return has_incumbent_ && bound >= incumbent_value_ - gap(incumbent_value_);
  }

  bool make_root_box(SolveResult& r);
  enum class Tighten { kDone, kInfeasible };
  Tighten tighten(Box& box, bool envelopes, bool cutoff);
  LpResult solve_relaxation(const Box& box) const;
  SolveResult unbounded_verdict() const;
  void search_tree(double root_bound);
  Box box_of(const Node& node) const;
  Branch choose_branch(const Box& box, const std::vector<double>& col) const;
  Branch fractional_integer(const Box& box, const std::vector<double>& col, double tol) const;
  void repair_integers(const Box& box, const std::vector<double>& col);
  enum class Candidate { kInfeasible, kFeasible, kImproved };
  Candidate consider(const std::vector<double>& col, bool polish);
  void dive(const Box& box, LpResult lp);
  void improve();
  void colour_free_sets();
  SolveResult finish();
  void log_progress(double bound) const;

  const Model& model_;
  const SolveOptions& options_;
  Relaxation relax_;
  bool zero_objective_;
  Clock::time_point deadline_;
  int64_t node_cap_;
  double rel_gap_;
  std::vector<int> integers_;
  // Sets of continuous product variables (no squares) with no product inside a set: freeing one
  // set with the rest fixed leaves an LP.
  std::vector<std::vector<int>> free_sets_;

  Box root_;
  bool has_incumbent_ = false;
  double incumbent_value_ = 0;  // minimized
  std::vector<double> incumbent_;

  std::priority_queue<Node, std::vector<Node>, WorseNode> open_;
  int64_t next_id_ = 0;
  int64_t nodes_ = 0;
  int64_t unresolved_ = 0;  // nodes dropped on a numerical failure
  double unresolved_bound_ = kInf;
  bool hit_time_ = false, hit_cap_ = false;
};

SolveResult Search::run() {
  SolveResult r;
  if (!make_root_box(r)) return r;
  LpResult root = solve_relaxation(root_);
  switch (root.status) {
    case LpStatus::kInfeasible:
      r.status = SolveStatus::kInfeasible;
      return r;
    case LpStatus::kUnbounded:
      return unbounded_verdict();
    case LpStatus::kFailed:
      r.status = SolveStatus::kError;
      r.message = "sbb: CLP failed on the root relaxation";
      return r;
    case LpStatus::kOptimal:
      break;
  }
  relax_.set_objective_scale(root.value);
  consider(root.col, /*polish=*/true);
  dive(root_, root);
  double root_bound = root.value;
  if (!relax_.products().empty() && !out_of_time()) {
    // With an incumbent, the cutoff row lets the envelopes cut the box much further.
    if (tighten(root_, /*envelopes=*/true, /*cutoff=*/has_incumbent_) == Tighten::kInfeasible)
      return finish();  // nothing better than the incumbent (or nothing at all) exists
  }
  search_tree(root_bound);
  return finish();
}

// The model's bounds, integer bounds rounded, then the product variables' bounds tightened by
// LP over the linear rows; every product variable must end up with finite bounds.
bool Search::make_root_box(SolveResult& r) {
  const int n = model_.num_vars();
  root_.lo.resize(size_t(n));
  root_.hi.resize(size_t(n));
  for (int j = 0; j < n; ++j) {
    double lo = model_.var(j).lower, hi = model_.var(j).upper;
    if (is_integer(j)) {
      lo = std::ceil(lo - kIntegralityTolerance);
      hi = std::floor(hi + kIntegralityTolerance);
    }
    if (lo > hi) {
      r.status = SolveStatus::kInfeasible;
      return false;
    }
    root_.lo[size_t(j)] = lo;
    root_.hi[size_t(j)] = hi;
  }
  if (relax_.products().empty()) return true;
  if (tighten(root_, /*envelopes=*/false, /*cutoff=*/false) == Tighten::kInfeasible) {
    r.status = SolveStatus::kInfeasible;
    return false;
  }
  if (out_of_time()) {
    r.status = SolveStatus::kTimeLimitNoSolution;
    r.message = "sbb: time limit reached while bounding the product variables";
    return false;
  }
  for (int j = 0; j < n; ++j) {
    if (!relax_.in_product(j)) continue;
    if (std::isfinite(root_.lo[size_t(j)]) && std::isfinite(root_.hi[size_t(j)])) continue;
    r.status = SolveStatus::kUnsupported;
    r.message = "sbb: variable " + model_.var(j).name +
                " has no finite bound; the spatial solver needs bounded quadratic variables";
    return false;
  }
  return true;
}

// Optimization-based bound tightening: min and max of each product variable over the
// relaxation (with envelopes, or over the linear rows alone), and with `cutoff` only over
// points at least as good as the incumbent. kInfeasible when no such point exists.
Search::Tighten Search::tighten(Box& box, bool envelopes, bool cutoff) {
  ClpSimplex clp;
  clp.setLogLevel(0);
  relax_.load(box.lo, box.hi, envelopes, clp);
  const int ncols = relax_.num_columns();
  if (cutoff) {
    std::vector<int> cols;
    std::vector<double> vals;
    for (int c = 0; c < ncols; ++c) {
      if (relax_.costs()[size_t(c)] == 0) continue;
      cols.push_back(c);
      vals.push_back(relax_.costs()[size_t(c)]);
    }
    clp.addRow(int(cols.size()), cols.data(), vals.data(), -COIN_DBL_MAX,
               incumbent_value_ - relax_.objective_constant());
  }
  std::vector<double> objective(size_t(ncols), 0.0);
  bool solved = false;
  for (int j = 0; j < relax_.num_vars(); ++j) {
    if (!relax_.in_product(j) || out_of_time()) continue;
    for (double dir : {1.0, -1.0}) {
      objective[size_t(j)] = dir;
      clp.chgObjCoefficients(objective.data());
      objective[size_t(j)] = 0;
      // After an objective change the last basis stays primal feasible (CLP starts from it),
      // so the primal simplex goes on from there; the first solve has no basis yet.
      LpStatus status;
      if (solved) {
        clp.primal();
        status = clp.status() == 0   ? LpStatus::kOptimal
                 : clp.status() == 1 ? LpStatus::kInfeasible
                                     : LpStatus::kFailed;
      } else {
        status = run_clp(clp);
      }
      if (status == LpStatus::kInfeasible) return Tighten::kInfeasible;
      solved = status == LpStatus::kOptimal;
      if (!solved) continue;
      const double v = clp.primalColumnSolution()[j];
      const double slack = kBoundSlack * std::max(1.0, std::fabs(v));
      if (dir > 0) {
        double lo = is_integer(j) ? std::ceil(v - kIntegralityTolerance) : v - slack;
        if (lo > box.lo[size_t(j)]) box.lo[size_t(j)] = lo;
      } else {
        double hi = is_integer(j) ? std::floor(v + kIntegralityTolerance) : v + slack;
        if (hi < box.hi[size_t(j)]) box.hi[size_t(j)] = hi;
      }
      // Round-off can cross the two ends of a fixed variable.
      if (box.lo[size_t(j)] > box.hi[size_t(j)]) {
        if (is_integer(j)) return Tighten::kInfeasible;
        box.lo[size_t(j)] = box.hi[size_t(j)] = 0.5 * (box.lo[size_t(j)] + box.hi[size_t(j)]);
      }
      clp.setColumnBounds(j, box.lo[size_t(j)], box.hi[size_t(j)]);
    }
  }
  return Tighten::kDone;
}

// The relaxation over `box`, with tangent cuts for squares re-solved a few rounds.
LpResult Search::solve_relaxation(const Box& box) const {
  ClpSimplex clp;
  clp.setLogLevel(0);
  relax_.load(box.lo, box.hi, /*envelopes=*/true, clp);
  LpResult r;
  r.status = run_clp(clp);
  for (int round = 0; round < kCutRounds && r.status == LpStatus::kOptimal; ++round) {
    if (relax_.add_tangent_cuts(clp.primalColumnSolution(), clp) == 0) break;
    r.status = run_clp(clp);
  }
  if (r.status != LpStatus::kOptimal) return r;
  const double* col = clp.primalColumnSolution();
  r.col.assign(col, col + relax_.num_columns());
  r.value = clp.objectiveValue() + relax_.objective_constant();
  return r;
}

// The relaxation is unbounded along a ray that moves no product variable (those are bounded),
// so the model is unbounded exactly when it has a feasible point: search for one.
SolveResult Search::unbounded_verdict() const {
  Search feasibility(model_, options_, /*zero_objective=*/true, deadline_, node_cap_);
  SolveResult f = feasibility.run();
  SolveResult r;
  if (f.status == SolveStatus::kOptimal) {
    r.status = SolveStatus::kUnbounded;
  } else if (f.status == SolveStatus::kInfeasible) {
    r.status = SolveStatus::kInfeasible;
  } else {
    r.status = SolveStatus::kInfeasibleOrUnbounded;
    r.message = "sbb: the relaxation is unbounded and no feasible point was found";
  }
  return r;
}

void Search::search_tree(double root_bound) {
  open_.push(Node{root_bound, next_id_++, {}});
  while (!open_.empty()) {
    // Best first: once the best open bound is pruned, every open node is.
    if (pruned(open_.top().bound)) break;
    if (out_of_time()) {
      hit_time_ = true;
      break;
    }
    if (nodes_ >= node_cap_) {
      hit_cap_ = true;
      break;
    }
    Node node = open_.top();
    open_.pop();
    ++nodes_;
    if (options_.verbose && nodes_ % 1000 == 0) log_progress(node.bound);
    const Box box = box_of(node);
    LpResult lp = solve_relaxation(box);
    if (lp.status == LpStatus::kInfeasible) continue;
    if (lp.status != LpStatus::kOptimal) {
      ++unresolved_;
      unresolved_bound_ = std::min(unresolved_bound_, node.bound);
      continue;
    }
    const double bound = std::max(node.bound, lp.value);
    if (pruned(bound)) continue;
    const Candidate own = consider(lp.col, /*polish=*/true);
    if (nodes_ % kDiveEvery == 0) dive(box, lp);
    if (pruned(bound)) continue;
    Branch b = choose_branch(box, lp.col);
    // An exact relaxation whose point is a model point solves the node, whatever round-off
    // (an objective that cancels, say) puts between the LP's value and the model's.
    if (b.var < 0 && own != Candidate::kInfeasible) continue;
    if (b.var < 0) {
      // Integral within tolerance and exact, yet not a model point: try the rounded integers
      // fixed, then split any integer that is off at all.
      repair_integers(box, lp.col);
      if (pruned(bound)) continue;
      b = fractional_integer(box, lp.col, 0.0);
    }
    if (b.var < 0) {
      // Nothing left to split: round-off between the LP and the model.
      ++unresolved_;
      unresolved_bound_ = std::min(unresolved_bound_, bound);
      continue;
    }
    Node down{bound, next_id_++, node.changes};
    down.changes.push_back({b.var, box.lo[size_t(b.var)], b.down_hi});
    Node up{bound, next_id_++, std::move(node.changes)};
    up.changes.push_back({b.var, b.up_lo, box.hi[size_t(b.var)]});
    open_.push(std::move(down));
    open_.push(std::move(up));
  }
}

Box Search::box_of(const Node& node) const {
  Box box = root_;
  for (const BoundChange& c : node.changes) {
    box.lo[size_t(c.var)] = c.lo;
    box.hi[size_t(c.var)] = c.hi;
  }
  return box;
}

// Integers first (the most fractional), then the variable carrying the most product
// violation, each violation weighted by the product's scale and the variable's share of its
// root width, so wide factors of badly violated products are split first.
Branch Search::choose_branch(const Box& box, const std::vector<double>& col) const {
  Branch b = fractional_integer(box, col, kIntegralityTolerance);
  if (b.var >= 0) return b;

  std::vector<double> score(size_t(relax_.num_vars()), 0.0);
  const auto& products = relax_.products();
  for (size_t k = 0; k < products.size(); ++k) {
    const Product& p = products[k];
    const double v = relax_.violation(int(k), col.data());
    if (v <= 1e-12 * std::max(1.0, std::fabs(col[size_t(p.i)] * col[size_t(p.j)]))) continue;
    for (int var : {p.i, p.j}) {
      const double width = box.hi[size_t(var)] - box.lo[size_t(var)];
      const double root_width = root_.hi[size_t(var)] - root_.lo[size_t(var)];
      const double scale =
          std::max({1.0, std::fabs(box.lo[size_t(var)]), std::fabs(box.hi[size_t(var)])});
      if (width <= 1e-9 * scale || root_width <= 0) continue;  // fixed for all purposes
      score[size_t(var)] += v * std::max(p.weight, 1e-12) * (width / root_width);
      if (p.i == p.j) break;
    }
  }
  const auto best = std::max_element(score.begin(), score.end());
  if (best == score.end() || *best <= 0) return b;
  const int var = int(best - score.begin());
  const double lo = box.lo[size_t(var)], hi = box.hi[size_t(var)], x = col[size_t(var)];
  if (is_integer(var)) {
    const double p = std::clamp(std::round(x), lo, hi);
    return p < hi ? Branch{var, p, p + 1} : Branch{var, p - 1, p};
  }
  const double margin = kBranchMargin * (hi - lo);
  const double p = std::clamp(x, lo + margin, hi - margin);
  return Branch{var, p, p};
}

// The integer variable farthest from an integer (by more than tol) that both children can
// take: floor and ceil must stay inside the box.
Branch Search::fractional_integer(const Box& box, const std::vector<double>& col,
                                  double tol) const {
  Branch b;
  double most_fractional = tol;
  for (int j : integers_) {
    const double x = col[size_t(j)], f = std::fabs(x - std::round(x));
    if (f <= most_fractional || std::floor(x) < box.lo[size_t(j)] ||
        std::ceil(x) > box.hi[size_t(j)])
      continue;
    most_fractional = f;
    b = Branch{j, std::floor(x), std::ceil(x)};
  }
  return b;
}

// A relaxation point whose integers are integral within tolerance can still miss the rows
// once they are rounded (a big-M row turns y = 1e-7 into room for x). Fixing the integers at
// their rounded values and solving again gives a point that fits, when one exists.
void Search::repair_integers(const Box& box, const std::vector<double>& col) {
  if (integers_.empty()) return;
  Box b = box;
  for (int j : integers_) {
    const double v = std::clamp(std::round(col[size_t(j)]), box.lo[size_t(j)], box.hi[size_t(j)]);
    b.lo[size_t(j)] = b.hi[size_t(j)] = v;
  }
  const LpResult lp = solve_relaxation(b);
  if (lp.status == LpStatus::kOptimal) consider(lp.col, /*polish=*/true);
}

// Takes the x part of a relaxation point (integers rounded) as a candidate; on a new incumbent
// with `polish`, runs the local search from it.
Search::Candidate Search::consider(const std::vector<double>& col, bool polish) {
  const int n = model_.num_vars();
  std::vector<double> x(col.begin(), col.begin() + n);
  for (int j = 0; j < n; ++j) {
    double& v = x[size_t(j)];
    if (is_integer(j)) v = std::round(v) + 0.0;
    v = std::clamp(v, model_.var(j).lower, model_.var(j).upper);
  }
  if (model_.max_violation(x) > kFeasibilityTolerance) return Candidate::kInfeasible;
  // In the feasibility search every point is worth 0.
  const double value = zero_objective_ ? 0.0 : relax_.sign() * model_.objective_value(x);
  if (has_incumbent_ && value >= incumbent_value_) return Candidate::kFeasible;
  has_incumbent_ = true;
  incumbent_value_ = value;
  incumbent_ = std::move(x);
  if (polish) improve();
  return Candidate::kImproved;
}

// Fixes the branching variable at its relaxation value, again and again, until the
// relaxation is exact (its point is then a model point) or stops paying.
void Search::dive(const Box& box, LpResult lp) {
  Box b = box;
  const int max_steps = relax_.num_vars() + 1;
  for (int step = 0; step < max_steps && !out_of_time(); ++step) {
    const Branch br = choose_branch(b, lp.col);
    if (br.var < 0) return;
    const size_t v = size_t(br.var);
    double fix = lp.col[v];
    if (is_integer(br.var)) fix = std::round(fix);
    fix = std::clamp(fix, b.lo[v], b.hi[v]);
    b.lo[v] = b.hi[v] = fix;
    lp = solve_relaxation(b);
    if (lp.status != LpStatus::kOptimal || pruned(lp.value)) return;
    consider(lp.col, /*polish=*/true);
  }
}

// Alternating LP from the incumbent: free one independent set of product variables at a
// time (all else fixed at the incumbent; integers stay fixed), which leaves an exact LP, and
// move to its optimum; sweep until a sweep improves nothing.
void Search::improve() {
  if (free_sets_.empty()) return;
  for (int round = 0; round < kImproveRounds && !out_of_time(); ++round) {
    bool better = false;
    for (const auto& set : free_sets_) {
      Box b = root_;
      for (int j = 0; j < relax_.num_vars(); ++j) {
        if (is_integer(j) || relax_.in_product(j))
          b.lo[size_t(j)] = b.hi[size_t(j)] = incumbent_[size_t(j)];
      }
      for (int j : set) {
        b.lo[size_t(j)] = root_.lo[size_t(j)];
        b.hi[size_t(j)] = root_.hi[size_t(j)];
      }
      const LpResult lp = solve_relaxation(b);
      if (lp.status != LpStatus::kOptimal || lp.value >= incumbent_value_ - gap(incumbent_value_))
        continue;
      if (consider(lp.col, /*polish=*/false) == Candidate::kImproved) better = true;
    }
    if (!better) return;
  }
}

// Greedy colouring of the product graph over the continuous product variables without a
// square (a square of a free variable would not be linear), in index order.
void Search::colour_free_sets() {
  const int n = relax_.num_vars();
  std::vector<bool> eligible(size_t(n), false);
  for (int j = 0; j < n; ++j) eligible[size_t(j)] = relax_.in_product(j) && !is_integer(j);
  std::vector<std::vector<int>> neighbours(static_cast<size_t>(n));
  for (const Product& p : relax_.products()) {
    if (p.i == p.j) {
      eligible[size_t(p.i)] = false;
      continue;
    }
    neighbours[size_t(p.i)].push_back(p.j);
    neighbours[size_t(p.j)].push_back(p.i);
  }
  std::vector<int> colour(size_t(n), -1);
  for (int j = 0; j < n; ++j) {
    if (!eligible[size_t(j)]) continue;
    std::vector<bool> taken(free_sets_.size() + 1, false);
    for (int k : neighbours[size_t(j)])
      if (colour[size_t(k)] >= 0) taken[size_t(colour[size_t(k)])] = true;
    int c = 0;
    while (taken[size_t(c)]) ++c;
    colour[size_t(j)] = c;
    if (c == int(free_sets_.size())) free_sets_.emplace_back();
    free_sets_[size_t(c)].push_back(j);
  }
}

void Search::log_progress(double bound) const {
  const double s = relax_.sign();
  std::fprintf(stderr, "sbb: %lld nodes, %zu open, bound %.10g, incumbent %.10g\n",
               static_cast<long long>(nodes_), open_.size(), s * bound,
               has_incumbent_ ? s * incumbent_value_ : s * kInf);
}

SolveResult Search::finish() {
  SolveResult r;
  r.message = "sbb: " + std::to_string(nodes_) + " nodes";
  if (!has_incumbent_) {
    if (hit_time_) {
      r.status = SolveStatus::kTimeLimitNoSolution;
    } else if (hit_cap_ || unresolved_ > 0) {
      r.status = SolveStatus::kError;
      r.message += hit_cap_ ? "; node cap hit without a feasible point"
                            : "; " + std::to_string(unresolved_) +
                                  " nodes failed numerically and no feasible point was found";
    } else {
      r.status = SolveStatus::kInfeasible;
    }
    return r;
  }
  double bound = incumbent_value_;
  if (!open_.empty()) bound = std::min(bound, open_.top().bound);
  bound = std::min(bound, unresolved_bound_);
  r.status = SolveStatus::kOptimal;
  if (hit_time_) {
    r.status = SolveStatus::kTimeLimitFeasible;
  } else if (hit_cap_) {
    r.status = SolveStatus::kTimeLimitFeasible;
    r.message += "; stopped at the node cap of " + std::to_string(node_cap_);
  } else if (unresolved_ > 0 && bound < incumbent_value_ - gap(incumbent_value_)) {
    r.status = SolveStatus::kTimeLimitFeasible;
    r.message += "; " + std::to_string(unresolved_) + " nodes failed numerically, gap not closed";
  }
  r.x = incumbent_;
  r.objective = model_.objective_value(r.x);
  r.best_bound = relax_.sign() * bound;
  if (options_.verbose) log_progress(bound);
  return r;
}

class SpatialSolver final : public Solver {
 public:
  explicit SpatialSolver(int64_t node_cap) : node_cap_(node_cap) {}
  std::string name() const override { return "sbb"; }
  std::string version() const override {
    return std::string("trex spatial branch-and-bound 1 over CLP ") + TREX_CLP_VERSION;
  }

  SolveResult solve(const Model& model, const SolveOptions& options) const override {
    model.validate();
    std::string huge = model.find_huge_number(kLargestCoinNumber);
    if (!huge.empty() || model.has_special_structure()) {
      SolveResult refused;
      refused.status = SolveStatus::kUnsupported;
      refused.message = huge.empty() ? "sbb: SOS sets and semi-continuous variables are not supported"
                                     : "sbb: " + huge + " is too large for CLP (limit 1e20)";
      refused.solver = name();
      refused.solver_version = version();
      return refused;
    }
    const auto t0 = Clock::now();
    const auto deadline = options.time_limit_s > 0
                              ? t0 + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(options.time_limit_s))
                              : Clock::time_point::max();
    SolveResult r;
    if (model.is_mip() && !model.has_quadratic_objective() && !model.has_quadratic_constraints()) {
      // This search branches on integers without cuts, presolve or primal heuristics worth
      // the name, and loses to big-M MILPs that CBC settles at once; spatial branching has
      // nothing to add to a linear model, so CBC takes it.
      r = make_cbc_solver()->solve(model, options);
      r.message = "sbb: MILP handed to cbc" + (r.message.empty() ? "" : "; " + r.message);
    } else {
      Search search(model, options, /*zero_objective=*/false, deadline, node_cap_);
      r = search.run();
    }
    r.solver = name();
    r.solver_version = version();
    r.seconds = seconds_since(t0);
    return r;
  }

 private:
  int64_t node_cap_;
};

}  // namespace

std::unique_ptr<Solver> make_spatial_solver(int64_t node_cap) {
  return std::make_unique<SpatialSolver>(std::max<int64_t>(1, node_cap));
}

}  // namespace trex::lp
