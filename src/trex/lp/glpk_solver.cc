// The "glpk" back end: GLPK's glpsol run as a separate process.
//
// GLPK is GPL-3+, so trex never links it: solve() writes the model as free MPS into a
// private temporary directory, runs glpsol on it, and reads back the plain-text solution
// file that `glpsol --write` produces. What was learned from GLPK 5.0 and relied on here:
//
//   * Its MPS reader gives an integer column inside MARKER INTORG/INTEND the bounds [0, 1]
//     unless BOUNDS says otherwise, so every integer column gets explicit bounds.
//   * A right-hand side on the objective row is the objective constant with the SAME sign
//     (RHS OBJ 10 adds +10), unlike some other MPS dialects.
//   * Free rows other than the objective are dropped on reading, so they are not written.
//   * --tmlim takes whole seconds only.
//   * Solution file: "s bas ROWS COLS PRIM DUAL OBJ" (PRIM/DUAL: f feasible, n no feasible
//     solution exists, i infeasible, u undefined) with "j COL STAT VALUE DUAL" lines for an
//     LP; "s mip ROWS COLS STAT OBJ" (o optimal, f feasible, n no feasible solution exists,
//     u undefined) with "j COL VALUE" lines for a MIP.
//   * With the LP presolver on, an infeasible or unbounded LP comes back "u u"; without it
//     the simplex method proves which ("n ?" or "f n"). A MIP whose LP relaxation is
//     infeasible or unbounded comes back "u" too, so the relaxation is then solved on its
//     own, and an unbounded relaxation is settled by a feasibility run (zero objective):
//     the MIP is unbounded when it has an integer-feasible point, otherwise infeasible.
//
// Objective values are recomputed from the returned point (glpsol prints 15 digits), so
// they carry the model's own constant exactly.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "trex/lp/solver.h"
#include "trex/lp/temp_dir.h"
#include "trex/util/subprocess.h"

namespace trex::lp {

namespace {

constexpr const char* kProgram = "glpsol";
// Without a time limit glpsol still gets one hour before it is killed, so a wedged child
// can never hang trex forever.
constexpr double kSafetyTimeoutS = 3600;
// glpsol checks --tmlim only between steps of its search (never while reading its input),
// so the wall clock that kills it runs this much longer than the limit it was given.
constexpr double kTimeoutMarginS = 30;

// glpsol keeps --tmlim in milliseconds in an int; a longer limit would overflow it.
constexpr double kMaxTmlimS = 1e6;

using Clock = std::chrono::steady_clock;

// --- A private temporary directory, removed with everything in it -----------------------

// --- Writing free MPS with names of our own ---------------------------------------------

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string col_name(size_t j) { return "C" + std::to_string(j + 1); }
std::string row_name(size_t r) { return "R" + std::to_string(r + 1); }

bool is_free(const Constraint& c) { return c.lower == -kInf && c.upper == kInf; }

// ROWS type; a ranged row is written as G with its RANGES entry giving [lower, upper].
char row_type(const Constraint& c) {
  if (c.lower == c.upper) return 'E';
  return c.lower > -kInf ? 'G' : 'L';
}

double row_rhs(const Constraint& c) { return c.lower > -kInf ? c.lower : c.upper; }

bool is_ranged(const Constraint& c) {
  return c.lower > -kInf && c.upper < kInf && c.lower != c.upper;
}

// BOUNDS records for one column. Continuous [0, inf) is glpsol's default and needs none;
// integer columns always get both ends, since inside markers GLPK would assume [0, 1].
void write_bounds(std::ostream& out, const Variable& v, const std::string& name) {
  const bool integer = v.type != VarType::kContinuous;
  if (!integer && v.lower == 0 && v.upper == kInf) return;
  const std::string tail = " BND " + name;
  if (v.lower == v.upper) {
    out << " FX" << tail << ' ' << num(v.lower) << '\n';
  } else if (v.lower == -kInf && v.upper == kInf) {
    out << " FR" << tail << '\n';
  } else if (v.lower == -kInf) {
    out << " MI" << tail << '\n' << " UP" << tail << ' ' << num(v.upper) << '\n';
  } else if (v.upper == kInf) {
    out << " LO" << tail << ' ' << num(v.lower) << '\n' << " PL" << tail << '\n';
  } else {
    // UP before LO: whatever a reader does to the lower bound on a negative UP, LO wins.
    out << " UP" << tail << ' ' << num(v.upper) << '\n'
        << " LO" << tail << ' ' << num(v.lower) << '\n';
  }
}

// The model as free MPS. With zero_objective the costs and constant are left out, which
// turns the model into a pure feasibility question.
std::string to_free_mps(const Model& m, bool zero_objective) {
  std::ostringstream out;
  out << "NAME trex\nROWS\n N OBJ\n";
  for (size_t r = 0; r < m.rows().size(); ++r) {
    const Constraint& c = m.rows()[r];
    if (!is_free(c)) out << ' ' << row_type(c) << ' ' << row_name(r) << '\n';
  }

  // MPS is column-major: gather each column's entries first.
  std::vector<std::vector<std::pair<size_t, double>>> cols(m.vars().size());
  for (size_t r = 0; r < m.rows().size(); ++r) {
    const Constraint& c = m.rows()[r];
    if (is_free(c)) continue;
    for (const Term& t : c.terms)
      if (t.coef != 0) cols[size_t(t.var)].emplace_back(r, t.coef);
  }
  out << "COLUMNS\n";
  bool in_marker = false;
  int markers = 0;
  for (size_t j = 0; j < m.vars().size(); ++j) {
    const Variable& v = m.vars()[j];
    const bool integer = v.type != VarType::kContinuous;
    if (integer != in_marker) {
      out << " M" << ++markers << " 'MARKER' " << (integer ? "'INTORG'" : "'INTEND'") << '\n';
      in_marker = integer;
    }
    const std::string name = col_name(j);
    const double cost = zero_objective ? 0.0 : v.cost;
    // A column with no entries at all still has to be declared; a zero cost does that.
    if (cost != 0 || cols[j].empty()) out << ' ' << name << " OBJ " << num(cost) << '\n';
    for (const auto& [r, coef] : cols[j])
      out << ' ' << name << ' ' << row_name(r) << ' ' << num(coef) << '\n';
  }
  if (in_marker) out << " M" << ++markers << " 'MARKER' 'INTEND'\n";

  out << "RHS\n";
  if (!zero_objective && m.objective_constant != 0)
    out << " RHS OBJ " << num(m.objective_constant) << '\n';
  for (size_t r = 0; r < m.rows().size(); ++r) {
    const Constraint& c = m.rows()[r];
    if (!is_free(c) && row_rhs(c) != 0)
      out << " RHS " << row_name(r) << ' ' << num(row_rhs(c)) << '\n';
  }
  out << "RANGES\n";
  for (size_t r = 0; r < m.rows().size(); ++r) {
    const Constraint& c = m.rows()[r];
    if (is_ranged(c)) out << " RNG " << row_name(r) << ' ' << num(c.upper - c.lower) << '\n';
  }
  out << "BOUNDS\n";
  for (size_t j = 0; j < m.vars().size(); ++j) write_bounds(out, m.vars()[j], col_name(j));
  out << "ENDATA\n";
  return out.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) throw std::runtime_error("cannot write temporary file " + path);
}

// --- Reading what glpsol wrote ----------------------------------------------------------

// One solution file as written by `glpsol --write`.
struct SolutionFile {
  bool read = false;  // the file existed and had a status line
  bool mip = false;   // "s mip" rather than "s bas"
  char primal = 'u';  // s bas: u f i n
  char dual = 'u';
  char mip_status = 'u';  // s mip: u o f n
  std::vector<double> x;  // indexed by column; NaN where no "j" line came
};

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

bool parse_double(std::string_view s, double& v) {
  std::string tmp(s);
  char* end = nullptr;
  v = std::strtod(tmp.c_str(), &end);
  return end && *end == '\0' && end != tmp.c_str();
}

SolutionFile read_solution(const std::string& path, size_t num_cols) {
  SolutionFile sol;
  std::ifstream f(path);
  if (!f) return sol;
  sol.x.assign(num_cols, std::nan(""));
  std::string line;
  while (std::getline(f, line)) {
    auto tok = split(line);
    if (tok.empty()) continue;
    if (tok[0] == "s" && tok.size() >= 5) {
      sol.read = true;
      sol.mip = tok[1] == "mip";
      if (sol.mip) {
        sol.mip_status = tok[4][0];
      } else if (tok.size() >= 6) {
        sol.primal = tok[4][0];
        sol.dual = tok[5][0];
      }
    } else if (tok[0] == "j" && tok.size() >= 3) {
      double j = 0, v = 0;
      // s bas: "j COL STAT PRIM DUAL"; s mip: "j COL VALUE".
      std::string_view value = sol.mip ? tok[2] : (tok.size() >= 4 ? tok[3] : tok[2]);
      if (parse_double(tok[1], j) && j >= 1 && j <= double(num_cols) && parse_double(value, v))
        sol.x[size_t(j) - 1] = v;
    }
  }
  return sol;
}

bool complete(const std::vector<double>& x) {
  for (double v : x)
    if (std::isnan(v)) return false;
  return true;
}

// The last line of glpsol's output that says something, for messages; the trailing
// bookkeeping ("Time used", "Writing ...") says nothing about the outcome.
std::string last_line(const std::string& log) {
  std::istringstream in(log);
  std::string line, last;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty() || line.rfind("Time used", 0) == 0 || line.rfind("Memory used", 0) == 0 ||
        line.rfind("Writing ", 0) == 0 || line.find("lines were written") != std::string::npos ||
        line.rfind("If you need actual output", 0) == 0)
      continue;
    last = line;
  }
  return last.empty() ? "(no output)" : last;
}

// The bound from glpsol's last MIP progress line, "+ N: mip = INCUMBENT >= BOUND ...".
bool last_mip_bound(const std::string& log, double& bound) {
  bool found = false;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '+' || line.find("mip =") == std::string::npos) continue;
    auto tok = split(line);
    for (size_t k = 0; k + 1 < tok.size(); ++k)
      if ((tok[k] == ">=" || tok[k] == "<=") && parse_double(tok[k + 1], bound)) found = true;
  }
  return found;
}

// --- Running glpsol ---------------------------------------------------------------------

struct Run {
  bool killed = false;      // our wall clock ran out and the child was killed
  bool time_limit = false;  // glpsol stopped on --tmlim
  bool failed = false;      // glpsol exited abnormally or wrote no solution
  std::string log;          // stdout then stderr
  SolutionFile sol;
};

// Everything one solve() call needs; one per call, so calls share nothing.
struct Job {
  const Model& model;
  const SolveOptions& options;
  TempDir dir;
  Clock::time_point start = Clock::now();

  bool has_limit() const { return options.time_limit_s > 0; }
  double seconds_left() const {
    return options.time_limit_s - std::chrono::duration<double>(Clock::now() - start).count();
  }
};

// Runs glpsol on `mps` (written to <tag>.mps) with `extra` options; the time limit is what
// is left of the call's.
Run run_glpsol(const Job& job, const std::string& tag, const std::string& mps, bool maximize,
               const std::vector<std::string>& extra) {
  Run run;
  // A follow-up run after the first one used up the time limit would only overrun it.
  if (job.has_limit() && job.seconds_left() <= 0) {
    run.time_limit = true;
    return run;
  }
  const std::string model_path = job.dir.file(tag + ".mps");
  const std::string sol_path = job.dir.file(tag + ".sol");
  write_file(model_path, mps);

  std::vector<std::string> argv = {kProgram, "--freemps", model_path,
                                   maximize ? "--max" : "--min", "--write", sol_path};
  ProcessOptions popt;
  popt.timeout_s = kSafetyTimeoutS;
  if (job.has_limit()) {
    double left = std::max(job.seconds_left(), 0.0);
    argv.push_back("--tmlim");
    argv.push_back(std::to_string(long(std::clamp(std::ceil(left), 1.0, kMaxTmlimS))));
    popt.timeout_s = left + kTimeoutMarginS;
  }
  argv.insert(argv.end(), extra.begin(), extra.end());

  ProcessResult pr = run_process(argv, popt);
  run.log = pr.out + pr.err;
  if (job.options.verbose) std::cerr << run.log;
  run.killed = pr.timed_out;
  run.time_limit = run.log.find("TIME LIMIT EXCEEDED") != std::string::npos;
  run.sol = read_solution(sol_path, job.model.vars().size());
  run.failed = pr.signaled || pr.exit_code != 0 || !run.sol.read;
  return run;
}

// --- From glpsol's answers to a SolveResult ---------------------------------------------

SolveResult status_only(SolveStatus status, std::string message = {}) {
  SolveResult r;
  r.status = status;
  r.message = std::move(message);
  return r;
}

SolveResult with_point(const Job& job, SolveStatus status, const std::vector<double>& x,
                       std::string message = {}) {
  if (!complete(x))
    return status_only(SolveStatus::kError, "glpk: solution file lacks some column values");
  SolveResult r = status_only(status, std::move(message));
  r.x = x;
  r.objective = job.model.objective_value(x);
  r.best_bound = r.objective;
  return r;
}

// A run that ended without a solution file to read: killed by our wall clock, crashed,
// or refused the input. Returns true (and fills `out`) when that is the case.
bool ended_badly(const Job& job, const Run& run, SolveResult& out) {
  if (run.killed) {
    out = job.has_limit()
              ? status_only(SolveStatus::kTimeLimitNoSolution,
                            "glpk: glpsol overran the time limit and was stopped")
              : status_only(SolveStatus::kError, "glpk: glpsol did not finish within " +
                                                     num(kSafetyTimeoutS) + " s and was stopped");
    return true;
  }
  if (run.failed) {
    out = status_only(SolveStatus::kError, "glpk: glpsol failed: " + last_line(run.log));
    return true;
  }
  return false;
}

// An LP status the simplex method has proven, if the basic solution shows one.
bool lp_decided(const Job& job, const Run& run, SolveResult& out) {
  const SolutionFile& s = run.sol;
  if (s.primal == 'f' && s.dual == 'f') {
    out = with_point(job, SolveStatus::kOptimal, s.x);
  } else if (s.primal == 'n') {
    out = status_only(SolveStatus::kInfeasible, "glpsol: " + last_line(run.log));
  } else if (s.primal == 'f' && s.dual == 'n') {
    out = status_only(SolveStatus::kUnbounded, "glpsol: " + last_line(run.log));
  } else {
    return false;
  }
  return true;
}

bool lp_time_limit(const Job& job, const Run& run, SolveResult& out) {
  if (!run.time_limit) return false;
  out = run.sol.primal == 'f' ? with_point(job, SolveStatus::kTimeLimitFeasible, run.sol.x)
                              : status_only(SolveStatus::kTimeLimitNoSolution);
  if (out.status == SolveStatus::kTimeLimitFeasible) out.best_bound = 0;  // not known
  return true;
}

SolveResult solve_lp(const Job& job) {
  const bool maximize = job.model.sense == Sense::kMaximize;
  const std::string mps = to_free_mps(job.model, false);
  SolveResult out;
  Run run = run_glpsol(job, "lp", mps, maximize, {});
  if (ended_badly(job, run, out) || lp_time_limit(job, run, out) || lp_decided(job, run, out))
    return out;
  // The presolver leaves an infeasible or unbounded LP undecided ("u u"); the simplex
  // method on the original problem says which.
  run = run_glpsol(job, "lp-nopresol", mps, maximize, {"--nopresol"});
  if (ended_badly(job, run, out) || lp_time_limit(job, run, out) || lp_decided(job, run, out))
    return out;
  if (run.sol.dual == 'n')
    return status_only(SolveStatus::kInfeasibleOrUnbounded, "glpsol: " + last_line(run.log));
  return status_only(SolveStatus::kError, "glpk: no status from glpsol: " + last_line(run.log));
}

// The MIP's LP relaxation is unbounded: it is unbounded itself exactly when it has an
// integer-feasible point, which a run with a zero objective finds or rules out.
SolveResult settle_unbounded_relaxation(const Job& job) {
  SolveResult out;
  Run run = run_glpsol(job, "feasibility", to_free_mps(job.model, true), false, {});
  if (ended_badly(job, run, out)) return out;
  const char st = run.sol.mip_status;
  if (st == 'o' || st == 'f')
    return status_only(SolveStatus::kUnbounded,
                       "glpk: LP relaxation unbounded and an integer-feasible point exists");
  if (st == 'n')
    return status_only(SolveStatus::kInfeasible,
                       "glpk: LP relaxation unbounded but no integer-feasible point exists");
  if (run.time_limit)
    return status_only(SolveStatus::kTimeLimitNoSolution,
                       "glpk: LP relaxation unbounded; integer feasibility undecided");
  return status_only(SolveStatus::kError, "glpk: feasibility run gave no status: " +
                                              last_line(run.log));
}

SolveResult solve_mip(const Job& job) {
  const bool maximize = job.model.sense == Sense::kMaximize;
  const std::string mps = to_free_mps(job.model, false);
  std::vector<std::string> extra;
  if (job.options.mip_rel_gap > 0) extra = {"--mipgap", num(job.options.mip_rel_gap)};

  SolveResult out;
  Run run = run_glpsol(job, "mip", mps, maximize, extra);
  if (ended_badly(job, run, out)) return out;
  switch (run.sol.mip_status) {
    case 'o':
      return with_point(job, SolveStatus::kOptimal, run.sol.x);
    case 'f':
      if (run.time_limit) {
        out = with_point(job, SolveStatus::kTimeLimitFeasible, run.sol.x);
        if (!last_mip_bound(run.log, out.best_bound)) out.best_bound = 0;
        return out;
      }
      // Stopped because the gap closed to options.mip_rel_gap: optimal as asked.
      if (run.log.find("MIP GAP TOLERANCE REACHED") != std::string::npos)
        return with_point(job, SolveStatus::kOptimal, run.sol.x, "glpk: stopped at the MIP gap");
      return status_only(SolveStatus::kError, "glpk: glpsol stopped early: " + last_line(run.log));
    case 'n':
      return status_only(SolveStatus::kInfeasible, "glpsol: " + last_line(run.log));
    default:
      break;
  }
  if (run.time_limit) return status_only(SolveStatus::kTimeLimitNoSolution);

  // Undefined: the LP relaxation had no optimum. Solve it alone, without presolver, to
  // learn whether it is infeasible or unbounded.
  run = run_glpsol(job, "relaxation", mps, maximize, {"--nomip", "--nopresol"});
  if (ended_badly(job, run, out)) return out;
  if (run.time_limit) return status_only(SolveStatus::kTimeLimitNoSolution);
  if (run.sol.primal == 'n')
    return status_only(SolveStatus::kInfeasible, "glpk: LP relaxation infeasible");
  if (run.sol.primal == 'f' && run.sol.dual == 'n') return settle_unbounded_relaxation(job);
  if (run.sol.dual == 'n')
    return status_only(SolveStatus::kInfeasibleOrUnbounded, "glpsol: " + last_line(run.log));
  return status_only(SolveStatus::kError, "glpk: no MIP status from glpsol: " +
                                              last_line(run.log));
}

// --- The back end -----------------------------------------------------------------------

// "GLPK 5.0 (glpsol)" from the first line of `glpsol --version`, asked once per process.
const std::string& glpsol_version() {
  static const std::string version = []() -> std::string {
    if (!program_available(kProgram)) return "GLPK (glpsol not found)";
    try {
      ProcessOptions popt;
      popt.timeout_s = 30;
      ProcessResult pr = run_process({kProgram, "--version"}, popt);
      std::string first = pr.out.substr(0, pr.out.find('\n'));
      auto tok = split(first);
      if (pr.exit_code == 0 && !tok.empty()) return "GLPK " + std::string(tok.back()) + " (glpsol)";
    } catch (const std::exception&) {
    }
    return "GLPK (glpsol version unknown)";
  }();
  return version;
}

// GLPK accepts an integer variable within 1e-5 of an integer. On a big-M row such as
// x - 1e6 y <= 0 with y binary, y = 1e-6 then switches x on for free, and glpsol reports a
// wrong "optimal" (Bench4Opt model_100: 218.2 instead of 5068.9). An answer whose integer
// variables are not integral to 1e-9, or that violates the model once read back, is therefore
// not passed on as a solution.
constexpr double kStrictIntegrality = 1e-9;

SolveResult check_integrality(const Model& model, SolveResult r) {
  if (!has_solution(r.status)) return r;
  for (int j = 0; j < model.num_vars(); ++j) {
    double v = r.x[size_t(j)];
    if (model.var(j).type == VarType::kContinuous) continue;
    if (std::fabs(v - std::round(v)) <= kStrictIntegrality * std::max(1.0, std::fabs(v))) continue;
    SolveResult bad;
    bad.status = SolveStatus::kError;
    bad.message = "glpk: integer variable " + model.var(j).name + " = " + std::to_string(v) +
                  " is not integral; GLPK's integrality tolerance makes its answer unsafe here";
    return bad;
  }
  // glpsol writes rounded values, so y = 1e-6 comes back as 0 and the row it relaxed shows.
  if (double v = model.max_violation(r.x); v > 1e-6) {
    SolveResult bad;
    bad.status = SolveStatus::kError;
    bad.message = "glpk: the returned point violates the model by " + std::to_string(v) +
                  " (GLPK's integrality tolerance met a big-M row)";
    return bad;
  }
  return r;
}

class GlpkSolver : public Solver {
 public:
  std::string name() const override { return "glpk"; }
  std::string version() const override { return glpsol_version(); }

  SolveResult solve(const Model& model, const SolveOptions& options) const override {
    const auto start = Clock::now();
    model.validate();
    SolveResult result = solve_checked(model, options);
    result.solver = name();
    result.solver_version = version();
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return result;
  }

 private:
  static SolveResult solve_checked(const Model& model, const SolveOptions& options) {
    if (model.has_quadratic_objective() || model.has_quadratic_constraints())
      return status_only(SolveStatus::kUnsupported, "glpk: quadratic terms are not supported");
    if (model.has_special_structure())
      return status_only(SolveStatus::kUnsupported,
                         "glpk: SOS sets and semi-continuous variables are not supported by glpsol");
    if (!program_available(kProgram))
      return status_only(SolveStatus::kError,
                         "glpk: glpsol not found in PATH (install GLPK's command-line solver, "
                         "e.g. the Debian package glpk-utils)");
    try {
      Job job{model, options, TempDir("trex-glpk")};
      if (!model.is_mip()) return solve_lp(job);
      return check_integrality(model, solve_mip(job));
    } catch (const std::exception& e) {
      return status_only(SolveStatus::kError, std::string("glpk: ") + e.what());
    }
  }
};

}  // namespace

std::unique_ptr<Solver> make_glpk_solver() { return std::make_unique<GlpkSolver>(); }

}  // namespace trex::lp
