// ORGEval structural equivalence: canonical bipartite graph plus Weisfeiler-Lehman refinement.
// The steps are listed in structure.h.
#include "trex/lp/structure.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

namespace trex::lp {

namespace {

// --- Numbers -------------------------------------------------------------------------------

constexpr int kMantissaBits = 40;
constexpr int64_t kInfKey = std::numeric_limits<int64_t>::max() / 2;

// An order-preserving integer key for v that keeps kMantissaBits of mantissa, so values that
// differ only in the last few of their 53 bits share a key. q(-v) == -q(v).
int64_t quantize(double v) {
  if (v == 0 || std::isnan(v)) return 0;
  if (std::isinf(v)) return v > 0 ? kInfKey : -kInfKey;
  int e = 0;
  double m = std::frexp(std::fabs(v), &e);  // m in [0.5, 1)
  int64_t mi = std::llround(std::ldexp(m, kMantissaBits + 1));
  if (mi == (int64_t(1) << (kMantissaBits + 1))) {  // rounded up into the next binade
    mi = int64_t(1) << kMantissaBits;
    ++e;
  }
  int64_t key = (int64_t(e + 1100) << (kMantissaBits + 2)) | mi;
  return v < 0 ? -key : key;
}

// --- Hashing -------------------------------------------------------------------------------

uint64_t mix(uint64_t x) {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct Hasher {
  uint64_t h = 0x7265786f72676576ULL;
  Hasher& add(uint64_t v) {
    h = mix(h ^ mix(v));
    return *this;
  }
  Hasher& add(int64_t v) { return add(uint64_t(v)); }
  Hasher& add(int v) { return add(uint64_t(int64_t(v))); }
  Hasher& add_all(const std::vector<uint64_t>& vs) {
    add(uint64_t(vs.size()));
    for (uint64_t v : vs) add(v);
    return *this;
  }
};

// --- Canonical form ------------------------------------------------------------------------

struct Edge {
  int node;
  int64_t coef;
  uint64_t key = 0;  // linear edges: a hash of coef and direction, set once, used every round
};

struct QuadEdge {
  int a, b;  // for a row: the variable pair; for a variable: the row and the other variable
  int64_t coef;
};

// Linear edges in compressed form: node k's edges are edges[start[k] .. start[k + 1]).
struct Adjacency {
  std::vector<int> start;
  std::vector<Edge> edges;
  size_t degree(size_t k) const { return size_t(start[k + 1] - start[k]); }
  const Edge* begin(size_t k) const { return edges.data() + start[k]; }
  const Edge* end(size_t k) const { return edges.data() + start[k + 1]; }
};

struct Graph {
  std::vector<uint64_t> var_colour, row_colour;  // round-0 colours
  std::vector<char> active;                      // variables kept by step 2
  Adjacency var_rows, row_vars;                  // the linear coefficients, both ways
  std::vector<std::vector<Edge>> var_vars;
  std::vector<std::vector<QuadEdge>> row_quads, var_quads;
};

// Chooses the orientation of a row (see structure.h, step 3). Returns +1 to keep it, -1 to
// negate it, 0 when the row equals its own negation.
int orientation(const Constraint& row) {
  thread_local std::vector<int64_t> keys, negated;  // reused: this runs once per row
  keys.clear();
  negated.clear();
  for (const Term& t : row.terms) keys.push_back(quantize(t.coef));
  for (const QuadTerm& q : row.quad) keys.push_back(quantize(q.coef));
  std::sort(keys.begin(), keys.end());
  for (auto it = keys.rbegin(); it != keys.rend(); ++it) negated.push_back(-*it);
  if (keys < negated) return 1;
  if (negated < keys) return -1;
  std::pair<int64_t, int64_t> kept{quantize(row.lower), quantize(row.upper)};
  std::pair<int64_t, int64_t> flipped{quantize(-row.upper), quantize(-row.lower)};
  if (kept < flipped) return 1;
  if (flipped < kept) return -1;
  return 0;
}

Graph canonical_graph(const Model& m, StructureSignature* sig) {
  const int nv = m.num_vars();
  std::vector<double> lower(static_cast<size_t>(nv)), upper(static_cast<size_t>(nv));
  for (int j = 0; j < nv; ++j) {
    const Variable& v = m.var(j);
    lower[size_t(j)] = v.lower;
    upper[size_t(j)] = v.upper;
    if (v.type == VarType::kBinary) {
      lower[size_t(j)] = std::max(v.lower, 0.0);
      upper[size_t(j)] = std::min(v.upper, 1.0);
    }
  }

  Graph g;
  g.row_vars.start.push_back(0);
  g.var_vars.resize(size_t(nv));
  g.var_quads.resize(size_t(nv));
  std::vector<std::pair<int64_t, int64_t>> row_bounds;
  std::vector<int> row_symmetric;

  for (const Constraint& row : m.rows()) {
    int nonzero_terms = 0;
    const Term* single = nullptr;
    for (const Term& t : row.terms)
      if (t.coef != 0) {
        ++nonzero_terms;
        single = &t;
      }
    if (row.lower == -kInf && row.upper == kInf) continue;  // a free row constrains nothing
    if (row.quad.empty() && nonzero_terms == 0) {
      if (!(row.lower <= 0 && 0 <= row.upper)) ++sig->num_infeasible_constant_rows;
      continue;
    }
    if (row.quad.empty() && nonzero_terms == 1) {
      double lo = row.lower / single->coef, up = row.upper / single->coef;
      if (single->coef < 0) std::swap(lo, up);
      lower[size_t(single->var)] = std::max(lower[size_t(single->var)], lo);
      upper[size_t(single->var)] = std::min(upper[size_t(single->var)], up);
      ++sig->num_bound_rows;
      continue;
    }
    int orient = orientation(row);
    const int r = int(row_bounds.size());
    if (orient >= 0)
      row_bounds.emplace_back(quantize(row.lower), quantize(row.upper));
    else
      row_bounds.emplace_back(quantize(-row.upper), quantize(-row.lower));
    row_symmetric.push_back(orient == 0);
    auto edge_coef = [orient](double c) {
      int64_t k = quantize(orient >= 0 ? c : -c);
      return orient == 0 ? std::abs(k) : k;
    };
    for (const Term& t : row.terms) {
      if (t.coef == 0) continue;
      int64_t c = edge_coef(t.coef);
      g.row_vars.edges.push_back({t.var, c, 0});
      sig->coefficients.push_back(uint64_t(c));
      ++sig->num_nonzeros;
    }
    g.row_vars.start.push_back(int(g.row_vars.edges.size()));
    std::vector<QuadEdge> quads;
    for (const QuadTerm& q : row.quad) {
      if (q.coef == 0) continue;
      int64_t c = edge_coef(q.coef);
      quads.push_back({q.i, q.j, c});
      g.var_quads[size_t(q.i)].push_back({r, q.j, c});
      if (q.j != q.i) g.var_quads[size_t(q.j)].push_back({r, q.i, c});
      sig->coefficients.push_back(uint64_t(c) ^ 0x5155414452415449ULL);
    }
    g.row_quads.push_back(std::move(quads));
  }

  // The transpose: each variable's rows, by counting.
  g.var_rows.start.assign(size_t(nv) + 1, 0);
  for (const Edge& e : g.row_vars.edges) ++g.var_rows.start[size_t(e.node) + 1];
  for (int j = 0; j < nv; ++j) g.var_rows.start[size_t(j) + 1] += g.var_rows.start[size_t(j)];
  g.var_rows.edges.resize(g.row_vars.edges.size());
  {
    std::vector<int> fill(g.var_rows.start.begin(), g.var_rows.start.end() - 1);
    for (size_t r = 0; r + 1 < g.row_vars.start.size(); ++r)
      for (const Edge* e = g.row_vars.begin(r); e != g.row_vars.end(r); ++e)
        g.var_rows.edges[size_t(fill[size_t(e->node)]++)] = {int(r), e->coef, 0};
  }
  for (Edge& e : g.row_vars.edges) e.key = mix(uint64_t(e.coef) ^ 0x726f772d76617273ULL);
  for (Edge& e : g.var_rows.edges) e.key = mix(uint64_t(e.coef) ^ 0x7661722d726f7773ULL);

  // Objective: diagonal quadratic terms belong to the variable's own colour, the others are
  // variable-variable edges.
  std::vector<int64_t> self_quad(size_t(nv), 0);
  for (const QuadTerm& q : m.objective_quad) {
    if (q.coef == 0) continue;
    int64_t c = quantize(q.coef);
    if (q.i == q.j) {
      self_quad[size_t(q.i)] = c;
    } else {
      g.var_vars[size_t(q.i)].push_back({q.j, c});
      g.var_vars[size_t(q.j)].push_back({q.i, c});
    }
  }

  g.var_colour.resize(size_t(nv));
  g.active.assign(size_t(nv), 1);
  int kept = 0;
  for (int j = 0; j < nv; ++j) {
    const Variable& v = m.var(j);
    const size_t k = size_t(j);
    if (g.var_rows.degree(k) == 0 && g.var_vars[k].empty() && g.var_quads[k].empty() && v.cost == 0 &&
        self_quad[k] == 0 && lower[k] <= upper[k]) {
      g.active[k] = 0;  // isolated (step 2)
      ++sig->num_dropped_vars;
      continue;
    }
    ++kept;
    int type = v.type == VarType::kContinuous ? 0 : 1;
    sig->num_integer += type;
    uint64_t c = Hasher()
                     .add(1)
                     .add(type)
                     .add(quantize(lower[k]))
                     .add(quantize(upper[k]))
                     .add(quantize(v.cost))
                     .add(self_quad[k])
                     .h;
    g.var_colour[k] = c;
    sig->var_features.push_back(c);
  }
  g.row_colour.resize(row_bounds.size());
  for (size_t r = 0; r < row_bounds.size(); ++r) {
    uint64_t c = Hasher().add(2).add(row_bounds[r].first).add(row_bounds[r].second).add(row_symmetric[r]).h;
    g.row_colour[r] = c;
    sig->row_features.push_back(c);
  }
  sig->num_vars = kept;
  sig->num_rows = int(row_bounds.size());
  std::sort(sig->var_features.begin(), sig->var_features.end());
  std::sort(sig->row_features.begin(), sig->row_features.end());
  std::sort(sig->coefficients.begin(), sig->coefficients.end());
  return g;
}

// --- Refinement ----------------------------------------------------------------------------

struct Histogram {
  uint64_t hash;
  size_t distinct;
};

Histogram histogram(const std::vector<uint64_t>& vars, const std::vector<char>& active,
                    const std::vector<uint64_t>& rows, std::vector<uint64_t>& scratch) {
  Hasher h;
  scratch.clear();
  for (size_t j = 0; j < vars.size(); ++j)
    if (active[j]) scratch.push_back(vars[j]);
  std::sort(scratch.begin(), scratch.end());
  h.add_all(scratch);
  size_t distinct = size_t(std::unique(scratch.begin(), scratch.end()) - scratch.begin());
  scratch = rows;
  std::sort(scratch.begin(), scratch.end());
  h.add_all(scratch);
  distinct += size_t(std::unique(scratch.begin(), scratch.end()) - scratch.begin());
  return {h.h, distinct};
}

// A node's new colour from its colour and its sorted, already mixed items: one mix each.
uint64_t combine(uint64_t colour, const std::vector<uint64_t>& items) {
  uint64_t h = mix(colour ^ uint64_t(items.size()));
  for (uint64_t x : items) h = mix(h ^ x);
  return h;
}

// One WL round: every node's new colour hashes its colour with the sorted multiset of
// (edge kind, edge feature, neighbour colours).
void refine(const Graph& g, std::vector<uint64_t>& vc, std::vector<uint64_t>& rc,
            std::vector<uint64_t>& items) {
  std::vector<uint64_t> nvc(vc.size()), nrc(rc.size());
  for (size_t j = 0; j < vc.size(); ++j) {
    items.clear();
    for (const Edge* e = g.var_rows.begin(j); e != g.var_rows.end(j); ++e) items.push_back(mix(e->key ^ rc[size_t(e->node)]));
    for (const Edge& e : g.var_vars[j]) items.push_back(Hasher().add(11).add(e.coef).add(vc[size_t(e.node)]).h);
    for (const QuadEdge& q : g.var_quads[j])
      items.push_back(Hasher().add(12).add(q.coef).add(rc[size_t(q.a)]).add(vc[size_t(q.b)]).h);
    std::sort(items.begin(), items.end());
    nvc[j] = combine(vc[j], items);
  }
  for (size_t r = 0; r < rc.size(); ++r) {
    items.clear();
    for (const Edge* e = g.row_vars.begin(r); e != g.row_vars.end(r); ++e) items.push_back(mix(e->key ^ vc[size_t(e->node)]));
    for (const QuadEdge& q : g.row_quads[r]) {
      uint64_t a = vc[size_t(q.a)], b = vc[size_t(q.b)];
      items.push_back(Hasher().add(21).add(q.coef).add(std::min(a, b)).add(std::max(a, b)).h);
    }
    std::sort(items.begin(), items.end());
    nrc[r] = combine(rc[r], items);
  }
  vc.swap(nvc);
  rc.swap(nrc);
}

// How many values of one sorted multiset have no partner in the other.
size_t multiset_difference(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  size_t i = 0, k = 0, common = 0;
  while (i < a.size() && k < b.size()) {
    if (a[i] == b[k]) {
      ++common;
      ++i;
      ++k;
    } else if (a[i] < b[k]) {
      ++i;
    } else {
      ++k;
    }
  }
  return a.size() + b.size() - 2 * common;
}

std::string counts(const char* what, long long a, long long b, const char* note = "") {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s: %lld against %lld%s", what, a, b, note);
  return buf;
}

}  // namespace

StructureSignature structure_signature(const Model& model) {
  StructureSignature sig;
  sig.sense = model.sense;
  sig.objective_constant = quantize(model.objective_constant);
  Graph g = canonical_graph(model, &sig);
  std::vector<uint64_t> vc = g.var_colour, rc = g.row_colour, scratch, items;
  Histogram hist = histogram(vc, g.active, rc, scratch);
  sig.rounds.push_back(hist.hash);
  // The partition refines at most once per node, so this ends within n + m + 1 rounds.
  const size_t max_rounds = vc.size() + rc.size() + 1;
  for (size_t round = 0; round < max_rounds; ++round) {
    refine(g, vc, rc, items);
    Histogram next = histogram(vc, g.active, rc, scratch);
    sig.rounds.push_back(next.hash);
    if (next.distinct == hist.distinct) break;
    hist = next;
  }
  sig.hash = Hasher()
                 .add(int(sig.sense))
                 .add(sig.objective_constant)
                 .add(sig.num_vars)
                 .add(sig.num_rows)
                 .add(sig.num_nonzeros)
                 .add(sig.num_infeasible_constant_rows)
                 .add(uint64_t(sig.rounds.size()))
                 .add(sig.rounds.back())
                 .h;
  return sig;
}

uint64_t structure_hash(const Model& model) { return structure_signature(model).hash; }

bool structurally_equivalent(const StructureSignature& a, const StructureSignature& b, std::string* why) {
  if (a.hash == b.hash) return true;
  if (!why) return false;
  if (a.sense != b.sense)
    *why = std::string("objective sense: ") + to_string(a.sense) + " against " + to_string(b.sense);
  else if (a.objective_constant != b.objective_constant)
    *why = "objective constants differ";
  else if (a.num_vars != b.num_vars)
    *why = counts("variables", a.num_vars, b.num_vars);
  else if (a.num_rows != b.num_rows)
    *why = counts("rows", a.num_rows, b.num_rows, " (after single-variable rows became bounds)");
  else if (a.num_integer != b.num_integer)
    *why = counts("integer variables", a.num_integer, b.num_integer);
  else if (a.num_nonzeros != b.num_nonzeros)
    *why = counts("nonzeros", a.num_nonzeros, b.num_nonzeros);
  else if (a.num_infeasible_constant_rows != b.num_infeasible_constant_rows)
    *why = counts("infeasible constant rows", a.num_infeasible_constant_rows, b.num_infeasible_constant_rows);
  else if (size_t d = multiset_difference(a.var_features, b.var_features); d > 0)
    *why = counts("variables: types, bounds or objective coefficients differ; unmatched feature values", (long long)d,
                  (long long)(a.var_features.size() + b.var_features.size()), " in all");
  else if (size_t d2 = multiset_difference(a.row_features, b.row_features); d2 > 0)
    *why = counts("rows: right-hand sides differ; unmatched feature values", (long long)d2,
                  (long long)(a.row_features.size() + b.row_features.size()), " in all");
  else if (size_t d3 = multiset_difference(a.coefficients, b.coefficients); d3 > 0)
    *why = counts("coefficients differ; unmatched values", (long long)d3,
                  (long long)(a.coefficients.size() + b.coefficients.size()), " in all");
  else {
    size_t round = 0;
    while (round < a.rounds.size() && round < b.rounds.size() && a.rounds[round] == b.rounds[round]) ++round;
    *why = "WL refinement separates them at round " + std::to_string(round) +
           " (same counts and features, different connections)";
  }
  return false;
}

bool structurally_equivalent(const Model& a, const Model& b, std::string* why) {
  return structurally_equivalent(structure_signature(a), structure_signature(b), why);
}

}  // namespace trex::lp
