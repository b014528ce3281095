#include "trex/ordata/checks.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "trex/lp/lp_format.h"
#include "trex/ordata/certificate.h"
#include "trex/ordata/reconstruct.h"
#include "trex/ordata/render.h"
#include "trex/util/error.h"

namespace trex::ordata {

namespace {

bool alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.10g", v);
  return b;
}

void pass(Sample& s, const char* name) { s.checks.push_back({name, "pass"}); }

bool fail(Sample& s, const char* name, const char* why, const std::string& detail) {
  s.checks.push_back({name, std::string(why) + ": " + detail});
  s.rejection = why;
  s.rejection_detail = detail;
  return false;
}

bool check_shape(const lp::Model& m, const ExpectedShape& e, std::string* detail) {
  int c = 0, i = 0, b = 0;
  for (const lp::Variable& v : m.vars()) {
    (v.type == lp::VarType::kBinary ? b : v.type == lp::VarType::kInteger ? i : c)++;
    if (e.nonnegative && v.lower < 0) {
      *detail = "variable " + v.name + " may be negative";
      return false;
    }
  }
  if (c != e.continuous || i != e.integer || b != e.binary) {
    *detail = "variables (continuous, integer, binary) = (" + std::to_string(c) + ", " + std::to_string(i) + ", " +
              std::to_string(b) + "), contract says (" + std::to_string(e.continuous) + ", " +
              std::to_string(e.integer) + ", " + std::to_string(e.binary) + ")";
    return false;
  }
  return true;
}

// The reference point and duals in the reconstruction's order (it names the same variables and
// rows, possibly in another order: read_lp numbers variables as they first appear).
void remap(const lp::Model& ref, const lp::Model& m, const Reference& r, std::vector<double>* x,
           std::vector<double>* y) {
  x->assign(size_t(m.num_vars()), 0.0);
  for (int j = 0; j < ref.num_vars(); ++j) (*x)[size_t(m.find_var(ref.var(j).name))] = (*r.x)[size_t(j)];
  if (!r.duals) return;
  y->assign(size_t(m.num_rows()), 0.0);
  std::vector<std::string> labels = ref.row_labels();
  for (int i = 0; i < ref.num_rows(); ++i) (*y)[size_t(m.find_row(labels[size_t(i)]))] = (*r.duals)[size_t(i)];
}

std::string lowercase(const std::string& text) {
  std::string lower(text);
  for (char& ch : lower)
    if (ch >= 'A' && ch <= 'Z') ch = char(ch - 'A' + 'a');
  return lower;
}

}  // namespace

std::vector<NumberSpan> number_spans(const std::string& s) {
  std::vector<NumberSpan> out;
  size_t i = 0;
  while (i < s.size()) {
    if (!std::isdigit(static_cast<unsigned char>(s[i])) || (i > 0 && (alnum(s[i - 1]) || s[i - 1] == '.'))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
      ++j;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    }
    bool word = j < s.size() && alnum(s[j]);
    bool list_marker = (i == 0 || s[i - 1] == '\n') && j + 1 < s.size() && s[j] == '.' && s[j + 1] == ' ';
    if (!word) out.push_back({i, j, list_marker});
    i = j;
  }
  return out;
}

std::set<double> stated_numbers(const std::string& s) {
  std::set<double> out;
  for (const NumberSpan& n : number_spans(s)) {
    if (n.list_marker) continue;
    double v = 0;
    std::from_chars(s.data() + n.begin, s.data() + n.end, v);
    out.insert(v);
  }
  return out;
}

std::set<double> formulation_numbers(const lp::Model& m) {
  std::set<double> out;
  auto add = [&](double v) {
    v = std::fabs(v);
    if (v != 0 && v != 1 && std::isfinite(v)) out.insert(v);
  };
  for (const lp::Variable& v : m.vars()) add(v.cost), add(v.lower), add(v.upper);
  for (const lp::Constraint& r : m.rows()) {
    add(r.lower), add(r.upper);
    for (const lp::Term& t : r.terms) add(t.coef);
  }
  add(m.objective_constant);
  return out;
}

std::string review_numbers(const std::string& statement, const lp::Model& model, const std::vector<double>& implied,
                           std::string* detail) {
  std::set<double> stated = stated_numbers(statement), used = formulation_numbers(model);
  for (double v : used) {
    bool ok = stated.count(v) > 0;
    for (double w : implied) ok = ok || std::fabs(w) == v;
    if (!ok) {
      *detail = "the formulation uses " + fmt(v) + ", which the statement does not state";
      return reason::kUnstatedCoefficient;
    }
  }
  for (double v : stated)
    if (v != 0 && v != 1 && !used.count(v)) {
      *detail = "the statement states " + fmt(v) + ", which the formulation does not use";
      return reason::kUnusedNumber;
    }
  return "";
}

void run_checks(const Instance& inst, const Reference& ref, const lp::Solver& resolver, Sample& s) {
  // The formulations parse.
  lp::Model from_lp, from_py;
  try {
    from_lp = lp::read_lp(s.formulations.lp, "<lp>");
    pass(s, "lp_parses");
  } catch (const InputError& e) {
    fail(s, "lp_parses", reason::kLpParse, e.what());
    return;
  }
  try {
    from_py = read_gurobipy(s.formulations.gurobipy);
    pass(s, "gurobipy_parses");
  } catch (const InputError& e) {
    fail(s, "gurobipy_parses", reason::kGurobipyParse, e.what());
    return;
  }
  // The contract: variable counts, types, bounds.
  std::string detail;
  for (const lp::Model* m : {&from_lp, &from_py})
    if (!check_shape(*m, inst.shape, &detail)) {
      fail(s, "contract", reason::kContract, detail);
      return;
    }
  pass(s, "contract");
  // Objective direction: formulation, contract and statement agree.
  bool maximize = inst.shape.sense == lp::Sense::kMaximize;
  if (from_lp.sense != inst.shape.sense || from_py.sense != inst.shape.sense) {
    fail(s, "direction", reason::kDirection, "the formulation's sense is not the contract's");
    return;
  }
  const std::string lower = lowercase(s.statement);
  if (lower.find(maximize ? "maximize" : "minimize") == std::string::npos ||
      lower.find(maximize ? "minimize" : "maximize") != std::string::npos) {
    fail(s, "direction", reason::kDirection, std::string("the statement does not ask to ") + (maximize ? "maximize" : "minimize"));
    return;
  }
  pass(s, "direction");
  // The reviewer.
  if (std::string why = review_numbers(s.statement, from_lp, inst.implied_numbers, &detail); !why.empty()) {
    fail(s, "reviewer", why.c_str(), detail);
    return;
  }
  pass(s, "reviewer");
  // The cleaner: normalized text, and no answer in it.
  if (clean_text(s.statement) != s.statement) {
    fail(s, "cleaner", reason::kAnswerLeak, "the statement is not normalized text");
    return;
  }
  for (const char* leak : {"optimal value", "optimal solution is", "the answer is", "objective value of"})
    if (lower.find(leak) != std::string::npos) {
      fail(s, "cleaner", reason::kAnswerLeak, std::string("the statement says '") + leak + "'");
      return;
    }
  if (ref.status == lp::SolveStatus::kOptimal) {
    std::set<double> stated = stated_numbers(s.statement);
    double obj = std::fabs(ref.objective);
    if (obj != 0 && stated.count(obj) && !formulation_numbers(*ref.model).count(obj)) {
      fail(s, "cleaner", reason::kAnswerLeak, "the statement contains the optimal objective " + fmt(ref.objective));
      return;
    }
  }
  pass(s, "cleaner");
  // Validation: each reconstruction gives the reference status and objective.
  for (const auto& [label, m] : {std::pair<const char*, const lp::Model*>{"lp", &from_lp}, {"gurobipy", &from_py}}) {
    std::string why;
    if (lp::same_model(*ref.model, *m, &why)) {
      // The same model: the reference verdict carries over; an optimum is re-proved by certificate.
      if (ref.status != lp::SolveStatus::kOptimal) continue;
      std::vector<double> x, y;
      remap(*ref.model, *m, ref, &x, &y);
      std::string bad = check_optimality_certificate(*m, ref.objective, x, ref.duals ? &y : nullptr);
      if (!bad.empty()) {
        fail(s, "validation", reason::kCertificate, std::string(label) + ": " + bad);
        return;
      }
      continue;
    }
    lp::SolveResult r = resolver.solve(*m, lp::SolveOptions{});
    if (r.status != ref.status) {
      fail(s, "validation", reason::kStatusMismatch,
           std::string(label) + ": " + lp::to_string(r.status) + " vs reference " + lp::to_string(ref.status) + " (" + why + ")");
      return;
    }
    if (ref.status == lp::SolveStatus::kOptimal && !objectives_agree(r.objective, ref.objective)) {
      fail(s, "validation", reason::kObjectiveMismatch,
           std::string(label) + ": objective " + fmt(r.objective) + " vs reference " + fmt(ref.objective));
      return;
    }
  }
  pass(s, "validation");
}

}  // namespace trex::ordata
