// An optimization model: variables, linear (and quadratic) constraints, an objective.
//
//   minimize or maximize   c'x + (sum over objective_quad of q * x_i * x_j) + objective_constant
//   subject to             row_lower <= a_r'x + (sum over r.quad of q * x_i * x_j) <= row_upper
//                          lower <= x <= upper,  x_j integer for kInteger and kBinary
//
// Every row type is a bound pair with kInf standing for "no bound": <= is (-kInf, rhs],
// >= is [rhs, kInf), = is [rhs, rhs], ranged is [l, u]. Quadratic terms are stored as they
// contribute to the value (no factor 1/2), one entry per unordered pair with i <= j.
// A kBinary variable always has bounds within [0, 1].
// A semi-continuous variable takes the value 0 or a value in [lower, upper] (lower >= 0,
// upper finite, continuous type). An SOS set of type 1 lets at most one of its variables be
// nonzero, one of type 2 at most two that are adjacent in the order of their weights.
//
// The Model is plain data; builders keep a name index so readers can look names up.
// Every route into a solver goes through validate(), which throws InputError on a
// malformed model (NaN, lower > upper, bad indices) so back ends never see one.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

namespace trex::lp {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

enum class Sense { kMinimize, kMaximize };
enum class VarType { kContinuous, kInteger, kBinary };
enum class RowSense { kLessEqual, kGreaterEqual, kEqual, kRanged, kFree };

struct Term {
  int var;
  double coef;
  bool operator==(const Term&) const = default;
};

struct QuadTerm {
  int i, j;  // i <= j
  double coef;
  bool operator==(const QuadTerm&) const = default;
};

struct Variable {
  std::string name;
  double lower = 0;
  double upper = kInf;
  VarType type = VarType::kContinuous;
  double cost = 0;
  bool semicontinuous = false;  // 0 or within [lower, upper]
};

// A special ordered set: members in increasing weight order after normalize().
struct SosSet {
  std::string name;
  int type = 1;                  // 1 or 2
  int priority = 0;              // branching priority, smaller first (CBC's convention)
  std::vector<int> vars;
  std::vector<double> weights;   // one per member, strictly increasing
  bool operator==(const SosSet&) const = default;
};

struct Constraint {
  std::string name;
  double lower = -kInf;
  double upper = kInf;
  std::vector<Term> terms;      // sorted by var, no duplicates, after normalize()
  std::vector<QuadTerm> quad;   // empty for a linear row
  RowSense sense() const;
};

class Model {
 public:
  std::string name;
  Sense sense = Sense::kMinimize;
  std::string objective_name = "obj";
  double objective_constant = 0;
  std::vector<QuadTerm> objective_quad;
  std::vector<SosSet> sos;

  // --- Building -----------------------------------------------------------------------
  // Adds a variable; throws InputError::field on a duplicate name. Returns its index.
  int add_var(const std::string& name, double lower = 0, double upper = kInf,
              VarType type = VarType::kContinuous, double cost = 0);
  // Index of `name`, creating a continuous [0, inf) variable when absent.
  int var_index_or_add(const std::string& name);
  // Index of `name` or -1.
  int find_var(const std::string& name) const;
  // Adds a row lower <= terms <= upper; duplicate terms are summed. Throws on a duplicate name.
  int add_row(const std::string& name, std::vector<Term> terms, double lower, double upper,
              std::vector<QuadTerm> quad = {});
  int find_row(const std::string& name) const;
  // Rows may be added with an empty name; this names each one "c<k>" (k = its 1-based
  // index, bumped past names already taken). Readers call it once at the end.
  void name_unnamed_rows();
  // Every row's name, unnamed rows given the names name_unnamed_rows() would give them,
  // without changing the model (writers use it).
  std::vector<std::string> row_labels() const;
  // The objective's name for a writer: objective_name when `usable` and not one of `rows`,
  // else "obj" (bumped to "obj_1", ... past the row names).
  std::string objective_label(const std::vector<std::string>& rows, bool usable) const;
  // Convenience forms of add_row.
  int add_le(const std::string& name, std::vector<Term> terms, double rhs);
  int add_ge(const std::string& name, std::vector<Term> terms, double rhs);
  int add_eq(const std::string& name, std::vector<Term> terms, double rhs);
  void set_cost(int var, double cost) { vars_[size_t(var)].cost = cost; }
  void add_objective_quad(int i, int j, double coef);

  // --- Reading ------------------------------------------------------------------------
  const std::vector<Variable>& vars() const { return vars_; }
  const std::vector<Constraint>& rows() const { return rows_; }
  Variable& var(int j) { return vars_[size_t(j)]; }
  const Variable& var(int j) const { return vars_[size_t(j)]; }
  Constraint& row(int r) { return rows_[size_t(r)]; }
  const Constraint& row(int r) const { return rows_[size_t(r)]; }
  int num_vars() const { return int(vars_.size()); }
  int num_rows() const { return int(rows_.size()); }
  int64_t num_nonzeros() const;
  int num_integer_vars() const;  // kInteger and kBinary
  int num_semicontinuous_vars() const;
  // True when the model needs branching: integer or semi-continuous variables, or SOS sets.
  bool is_mip() const { return num_integer_vars() > 0 || !sos.empty() || num_semicontinuous_vars() > 0; }
  // SOS sets or semi-continuous variables: only back ends that branch on them may solve it.
  bool has_special_structure() const { return !sos.empty() || num_semicontinuous_vars() > 0; }
  bool has_quadratic_objective() const { return !objective_quad.empty(); }
  bool has_quadratic_constraints() const;

  // Objective value of a point (size num_vars()).
  double objective_value(const std::vector<double>& x) const;
  // Largest violation of a row, bound, integrality, semi-continuity or SOS condition by x (0
  // when feasible). Row and bound violations are relative to max(1, |bound|); integrality is
  // absolute, as is an SOS set's (the magnitude of the values outside its allowed nonzeros).
  double max_violation(const std::vector<double>& x) const;

  // The first coefficient, bound or right-hand side whose magnitude exceeds `limit` (infinite
  // bounds excepted), described as "objective coefficient 1e+26 of x", or "" when none does.
  // Back ends refuse such models: CLP 1.17 aborts on an objective coefficient of 1e25.
  std::string find_huge_number(double limit) const;

  // Sorts and merges terms, merges quadratic pairs, sorts SOS members by weight; call after
  // editing rows by hand.
  void normalize();
  // Throws InputError (field = the variable or row name) on NaN or infinite
  // coefficients, lower > upper, binaries outside [0, 1], an index out of range, a
  // semi-continuous variable that is integer, has a negative lower or an infinite upper
  // bound, or an SOS set with a repeated member or weight.
  void validate() const;

 private:
  std::vector<Variable> vars_;
  std::vector<Constraint> rows_;
  std::unordered_map<std::string, int> var_index_;
  std::unordered_map<std::string, int> row_index_;
};

// Quadratic terms with i <= j, one per pair, each summed in stored order (stable, so the sum
// is the same wherever it is formed), pairs that cancel to 0 dropped.
std::vector<QuadTerm> merge_quad_terms(std::vector<QuadTerm> quad);

// Same model up to the order of variables and rows: matched by name, with coefficients
// compared exactly. On a difference, `why` (if given) says the first one found.
bool same_model(const Model& a, const Model& b, std::string* why = nullptr);

const char* to_string(VarType t);
const char* to_string(Sense s);

}  // namespace trex::lp
