// trex solve FILE: read an .lp, .mps or MathProg .mod model, solve it, print status, objective and the
// nonzero variables (or one JSON object with --json).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "nlohmann/json.hpp"
#include "trex/lp/deadline.h"
#include "trex/lp/model_file.h"
#include "trex/lp/mps_format.h"
#include "trex/lp/read_limit.h"
#include "trex/lp/solver.h"
#include "trex/util/error.h"

namespace trex::cli {

namespace {

struct SolveArgs {
  std::string file;
  std::vector<std::string> data_files;
  std::string mps_format = "auto";
  bool cplex_integers = false;
  std::string solver = lp::kDefaultSolver;
  double time_limit = 0;
  int threads = 1;
  bool json = false;
  bool all = false;
};

// Human output rounds to 12 significant digits (99.99999999999999 reads as 100); --json
// carries every digit.
std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  return buf;
}

int exit_code_for(lp::SolveStatus s) {
  return s == lp::SolveStatus::kUnsupported || s == lp::SolveStatus::kError ? kSolverFailedExitCode
                                                                              : 0;
}

// The time limit ran out before the solver was called (glpsol's MathProg translation, or the
// reading itself, used the whole budget): reported as a time-limit stop, not as an error.
lp::SolveResult stopped_before_solving(const lp::Solver& solver, const std::string& why, double seconds) {
  lp::SolveResult r;
  r.status = lp::SolveStatus::kTimeLimitNoSolution;
  r.solver = solver.name();
  r.solver_version = solver.version();
  r.message = why;
  r.seconds = seconds;
  return r;
}

// CLP's presolve never looks at the clock: on GLPK's huge.mod (an LP with a row over 1,048,575
// columns and a column in every other row) it ran minutes past a 60 s budget, inside
// ClpSimplex::initialSolve, in trex as in the cbc program. The command keeps the budget itself:
// once it has passed by a grace (1 s + 5%, more than the solvers' own overshoot, so that a solver
// which stops by itself keeps its better answer) without an answer, the watchdog prints the
// time-limit verdict and ends the process. Exactly one of the two prints: whoever claims first.
// It watches the solver call only; the reading has its own limit (ReadLimit, glpsol's timeout).
class SolveWatchdog {
 public:
  SolveWatchdog(double limit_s, double elapsed_s, std::function<int()> on_expiry) {
    if (!(limit_s > 0)) return;
    double wait_s = limit_s * 1.05 + 1.0 - elapsed_s;
    thread_ = std::thread([this, wait_s, on_expiry] {
      std::unique_lock<std::mutex> lock(mutex_);
      auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(wait_s, 0.0));
      if (done_.wait_until(lock, until, [this] { return claimed_; })) return;
      claimed_ = true;
      int code = on_expiry();
      std::fflush(stdout);
      std::fflush(stderr);
      std::_Exit(code);  // the solver thread is still inside CLP; nothing of trex's is half-written
    });
  }
  ~SolveWatchdog() {
    claim();
    if (thread_.joinable()) thread_.join();
  }
  SolveWatchdog(const SolveWatchdog&) = delete;
  SolveWatchdog& operator=(const SolveWatchdog&) = delete;

  // The solver answered: from now on only the caller prints.
  void claim() {
    std::lock_guard<std::mutex> lock(mutex_);
    claimed_ = true;
    done_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  bool claimed_ = false;
  std::thread thread_;
};

int print_result(const SolveArgs& args, const lp::Model& model, bool read_whole, const lp::SolveResult& r);

int run_solve(const SolveArgs& args) {
  if (args.time_limit < 0) throw InputError::field("--time-limit", "must be >= 0");
  if (args.threads < 1) throw InputError::field("--threads", "must be >= 1");
  // One budget for the whole command: reading (glpsol's translation of a .mod above all) and
  // every solver phase share it.
  lp::Deadline deadline(args.time_limit);
  auto solver = lp::make_solver(args.solver);
  lp::ReadOptions read;
  read.mps.format = lp::parse_mps_format(args.mps_format, "--mps-format");
  read.mps.integer_markers_unbounded = args.cplex_integers;
  read.data_files = args.data_files;
  read.time_limit_s = deadline.phase_limit();
  lp::Model model;
  bool read_whole = false;
  lp::SolveResult r;
  try {
    model = lp::read_model_file(args.file, read);
    read_whole = true;
  } catch (const lp::ReadTimeLimit& e) {
    r = stopped_before_solving(*solver, e.what(), deadline.elapsed());
  }
  if (read_whole && deadline.passed()) {
    // Read to the end, but the budget is spent: the same verdict as a read that was stopped.
    r = stopped_before_solving(*solver, lp::ReadLimit::stop_message(args.file, args.time_limit),
                               deadline.elapsed());
  }
  else if (read_whole) {
    lp::SolveOptions options;
    options.time_limit_s = deadline.phase_limit();
    options.threads = args.threads;
    SolveWatchdog watchdog(args.time_limit, deadline.elapsed(), [&] {
      lp::SolveResult stopped = stopped_before_solving(
          *solver,
          "the solver did not stop at the time limit (CLP's presolve does not watch the clock); trex "
          "ended it",
          deadline.elapsed());
      return print_result(args, model, read_whole, stopped);
    });
    // The tests' stand-in for a solver that does not watch the clock (CLP's presolve on a
    // model like huge.mod): it stalls this long before solving. Unset in any real run.
    if (const char* stall = std::getenv("TREX_TEST_SOLVER_STALL_S"))
      std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(stall)));
    r = solver->solve(model, options);
    watchdog.claim();
  }
  return print_result(args, model, read_whole, r);
}

int print_result(const SolveArgs& args, const lp::Model& model, bool read_whole, const lp::SolveResult& r) {
  bool solved = lp::has_solution(r.status);

  if (args.json) {
    nlohmann::ordered_json j;
    j["file"] = args.file;
    j["status"] = lp::to_string(r.status);
    j["objective"] = solved ? nlohmann::ordered_json(r.objective) : nlohmann::ordered_json(nullptr);
    nlohmann::ordered_json vars = nlohmann::ordered_json::object();
    if (solved)
      for (int k = 0; k < model.num_vars(); ++k)
        if (args.all || r.x[size_t(k)] != 0) vars[model.var(k).name] = r.x[size_t(k)];
    j["variables"] = vars;
    // Row duals and reduced costs in Gurobi's convention (its Pi and RC), only for an LP solved
    // to optimality (solver.h); listed as the variables are: nonzeros, or all with --all.
    if (solved && !r.duals.empty()) {
      nlohmann::ordered_json duals = nlohmann::ordered_json::object();
      for (int i = 0; i < model.num_rows(); ++i)
        if (args.all || r.duals[size_t(i)] != 0) duals[model.row(i).name] = r.duals[size_t(i)];
      j["duals"] = duals;
    }
    if (solved && !r.reduced_costs.empty()) {
      nlohmann::ordered_json rc = nlohmann::ordered_json::object();
      for (int k = 0; k < model.num_vars(); ++k)
        if (args.all || r.reduced_costs[size_t(k)] != 0) rc[model.var(k).name] = r.reduced_costs[size_t(k)];
      j["reduced_costs"] = rc;
    }
    j["solver"] = r.solver;
    j["solver_version"] = r.solver_version;
    j["seconds"] = r.seconds;
    if (!r.message.empty()) j["message"] = r.message;
    // Names are bytes from the file; invalid UTF-8 is replaced, never an error.
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return exit_code_for(r.status);
  }

  if (read_whole)
    std::printf("model:     %s (%d variables, %d integer, %d constraints, %lld nonzeros%s)\n",
                args.file.c_str(), model.num_vars(), model.num_integer_vars(), model.num_rows(),
                (long long)model.num_nonzeros(),
                model.has_quadratic_objective() || model.has_quadratic_constraints() ? ", quadratic"
                                                                                      : "");
  else
    std::printf("model:     %s (not read: the time limit passed first)\n", args.file.c_str());
  std::printf("status:    %s\n", lp::to_string(r.status));
  if (solved) std::printf("objective: %s\n", number(r.objective).c_str());
  std::printf("solver:    %s (%s), %.3f s\n", r.solver.c_str(), r.solver_version.c_str(), r.seconds);
  if (!r.message.empty()) std::printf("message:   %s\n", r.message.c_str());
  if (solved) {
    int shown = 0;
    for (int k = 0; k < model.num_vars(); ++k) {
      double v = r.x[size_t(k)];
      if (!args.all && v == 0) continue;
      if (shown++ == 0) std::printf("%s:\n", args.all ? "variables" : "nonzero variables");
      std::printf("  %s = %s\n", model.var(k).name.c_str(), number(v).c_str());
    }
    if (shown == 0) std::printf("all variables are zero\n");
  }
  return exit_code_for(r.status);
}

}  // namespace

void add_solve_command(CLI::App& app, Action* action) {
  auto args = std::make_shared<SolveArgs>();
  CLI::App* cmd = app.add_subcommand("solve", "Solve an optimization model (.lp, .mps or MathProg .mod)");
  cmd->add_option("file", args->file,
                  "Model file: CPLEX/Gurobi LP, MPS (free or fixed), or GNU MathProg (.mod, translated by glpsol)")
      ->required();
  cmd->add_option("-d,--data", args->data_files, "MathProg data file (.dat) for a .mod model; may be repeated");
  cmd->add_option("--mps-format", args->mps_format, "MPS layout: auto (default), free or fixed");
  cmd->add_flag("--mps-cplex-integers", args->cplex_integers,
                "Read MPS marker-integer columns without bounds as [0, inf) as CPLEX does (default: [0, 1], as COIN-OR and GLPK)");
  cmd->add_option("--solver", args->solver, "Back end: auto (default: cbc, or sbb for nonconvex quadratic models), cbc, sbb or glpk");
  cmd->add_option("--time-limit", args->time_limit, "Wall-clock seconds for the whole solve, every phase included (0: none)");
  cmd->add_option("--threads", args->threads, "Threads for the MIP search (default 1)");
  cmd->add_flag("--json", args->json, "Print one JSON object: status, objective, variables, solver, seconds");
  cmd->add_flag("--all", args->all, "List every variable, zeros included");
  cmd->footer(
      "Exit status: 0 when the model was read and solved (infeasible and unbounded included),\n"
      "2 for usage and input errors, 3 when the back end cannot solve this kind of model.");
  cmd->callback([args, action] { *action = [args] { return run_solve(*args); }; });
}

namespace {
const CommandRegistration kSolveRegistration(20, add_solve_command);
}  // namespace

}  // namespace trex::cli
