// The modelling modules (python/trex_modeling and its gurobipy, coptpy and PuLP faces): their
// own behaviour checks in standalone mode (tests/oreval/python/*_check.py, solves through the
// trex binary), then each face run in the sandbox, the classes of programs trex cannot run,
// and a PuLP program that tries to start a solver process anyway.
#include <gtest/gtest.h>

#include "trex/oreval/execute.h"
#include "trex/util/data_dir.h"
#include "trex/util/subprocess.h"

namespace trex::oreval {
namespace {

#define REQUIRE_PYTHON() \
  if (!program_available("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not installed"

bool has_pulp() {
  if (!program_available("/usr/bin/python3")) return false;
  return run_process({"/usr/bin/python3", "-c", "import pulp"}).exit_code == 0;
}

#define REQUIRE_PULP() \
  if (!has_pulp()) GTEST_SKIP() << "PuLP not installed (Debian python3-pulp, scripts/install-deps.sh)"

ProcessResult run_check(const std::string& file, const std::vector<std::string>& args = {}) {
  std::string py = std::string(TREX_SOURCE_DIR) + "/python";
  std::vector<std::string> argv = {"/usr/bin/env", "PYTHONPATH=" + py, std::string("TREX_BINARY=") + TREX_BINARY,
                                   "TREX_EVAL_CHANNEL_FD=", "/usr/bin/python3", "-B",
                                   std::string(TREX_SOURCE_DIR) + "/tests/oreval/python/" + file};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions po;
  po.timeout_s = 300;  // a hang guard only; the checks take seconds
  ProcessResult r = run_process(argv, po);
  EXPECT_EQ(r.exit_code, 0) << file << "\n" << r.out << r.err;
  return r;
}

// A unittest file: all its tests ran and passed.
void run_unittest(const std::string& file) {
  ProcessResult r = run_check(file);
  EXPECT_NE(r.err.find("\nOK"), std::string::npos) << r.err;
}

TEST(Modeling, GurobipyBehaviours) {
  REQUIRE_PYTHON();
  run_unittest("gurobipy_api_check.py");
}

TEST(Modeling, CoptpyBehaviours) {
  REQUIRE_PYTHON();
  run_unittest("coptpy_api_check.py");
}

TEST(Modeling, PulpWithTrexAsItsSolver) {
  REQUIRE_PULP();
  run_unittest("pulp_solver_check.py");
}

// The report's ORGEval harness pattern (a fresh interpreter per program writes model.lp,
// gurobipy.read reads it and Gurobi's reference LP, the two are compared) on every fourth
// Bench4Opt reference program and the listed ones (three misses, one text difference); the
// whole split with --every 1.
TEST(Modeling, HarnessPatternOnBench4OptReferences) {
  REQUIRE_PYTHON();
  if (find_data("or-benchmarks/bench4opt").empty()) GTEST_SKIP() << "Bench4Opt data not found under " << data_dir();
  ProcessResult r = run_check("harness_pattern_check.py", {data_dir(), "--every", "4"});
  EXPECT_NE(r.out.find("programs 27, structure as the reference 24,"), std::string::npos) << r.out;
}

// The same on the feasible split's 87 reference programs and their reference LPs (every fourth
// and the listed ones): the structure and the text differences, each listed with its reason.
TEST(Modeling, HarnessPatternOnBench4OptFeasibleReferences) {
  REQUIRE_PYTHON();
  if (find_data("or-benchmarks/bench4opt").empty()) GTEST_SKIP() << "Bench4Opt data not found under " << data_dir();
  ProcessResult r = run_check("harness_pattern_check.py", {data_dir(), "--every", "4", "--feasible"});
  EXPECT_NE(r.out.find("programs 25, structure as the reference 24,"), std::string::npos) << r.out;
}

ExecOptions sandbox_options() {
  ExecOptions o;
  o.python_dir = std::string(TREX_SOURCE_DIR) + "/python";
  o.limits.wall_s = 60;  // a hang guard; nothing here depends on how fast it runs
  o.limits.cpu_s = 60;
  o.allow_weak_sandbox = true;  // trex's own programs, where a layer may be missing
  return o;
}

Execution run(const std::string& code) { return execute({CodeKind::kPython, code}, "", sandbox_options()); }

// An ORLM completion as ORLM's eval/execute.py runs it (its closing lines appended).
constexpr const char* kOrlmProgram = R"PY(import coptpy as cp
from coptpy import COPT
env = cp.Envr()
model = env.createModel("Zhang")
x = {n: model.addVar(vtype=COPT.BINARY, name="x_" + n) for n in ["H", "R", "W", "F", "G", "GI"]}
cost = {"H": 1200, "R": 1650, "W": 750, "F": 800, "G": 800, "GI": 1500}
model.setObjective(cp.quicksum(cost[n] * x[n] for n in x), sense=COPT.MINIMIZE)
model.addConstr(cp.quicksum(x.values()) <= 4)
model.addConstr(cp.quicksum(x.values()) >= 3)
model.addConstr(x["GI"] == 1)
model.addConstr(x["H"] + x["F"] <= 1)
model.addConstr(x["H"] + x["G"] <= 1)
model.solve()
if model.status == COPT.OPTIMAL:
    print(f"Just print the best solution: {model.objval}")
else:
    print("No Best Solution")
)PY";

TEST(Modeling, CoptpyProgramInTheSandbox) {
  REQUIRE_PYTHON();
  Execution e = run(kOrlmProgram);
  ASSERT_EQ(e.status, ExecStatus::kOk) << e.message << "\n" << e.output;
  EXPECT_NE(e.output.find("Just print the best solution: 3050.0\n"), std::string::npos) << e.output;
  EXPECT_NE(e.output.find("Best solution   : 3050.000000000\n"), std::string::npos) << e.output;
  EXPECT_EQ(e.solve_requests, 1);
  EXPECT_EQ(e.message, "model from variable model");
  ASSERT_TRUE(e.model);
  EXPECT_EQ(e.model->num_vars(), 6);
}

// General constraints and SOS inside `trex eval`: the program's optimize() goes through the
// channel with the linear formulation (trex_modeling/general.py), solved once, and the model
// trex records holds that formulation (3 variables of the program, 2 binaries for MAX, 2 for SOS).
TEST(Modeling, GurobipyGeneralConstraintsInTheSandbox) {
  REQUIRE_PYTHON();
  Execution e = run(
      "import gurobipy as gp\nfrom gurobipy import GRB\nmodel = gp.Model('g')\n"
      "x = model.addVar(lb=-4, ub=3, name='x')\nr = model.addVar(lb=-9, ub=9, name='r')\n"
      "b = model.addVar(vtype=GRB.BINARY, name='b')\n"
      "model.addConstr(r == gp.max_(x, constant=1))\nmodel.addConstr((b == 1) >> (x <= -2))\n"
      "model.addSOS(GRB.SOS_TYPE1, [x, r])\n"
      "model.setObjective(r - x + 3 * b, GRB.MAXIMIZE)\nmodel.optimize()\n"
      "print('objective %g x %g r %g b %g' % (model.ObjVal, x.X, r.X, b.X))\n");
  ASSERT_EQ(e.status, ExecStatus::kOk) << e.message << "\n" << e.output;
  // r = max(x, 1) >= 1, so SOS1 {x, r} makes x = 0 and r = 1; b = 1 would need x <= -2: b = 0.
  // Without the SOS row x = -4, r = 1, b = 1 would give 8.
  EXPECT_NE(e.output.find("objective 1 x 0 r 1 b 0\n"), std::string::npos) << e.output;
  EXPECT_EQ(e.solve_requests, 1);
  ASSERT_TRUE(e.model);
  EXPECT_EQ(e.model->num_vars(), 7);
}

// Pi and RC of an LP inside `trex eval`: CLP's duals, in the reply to the program's one solve
// request (lp::SolveResult::duals through the solve helper and the channel).
TEST(Modeling, GurobipyDualsThroughTheChannel) {
  REQUIRE_PYTHON();
  Execution e = run(
      "import gurobipy as gp\nfrom gurobipy import GRB\nmodel = gp.Model()\nx = model.addVars(3, name='x')\n"
      "c1 = model.addConstr(x[0] + 2 * x[1] + x[2] <= 10)\nc2 = model.addConstr(2 * x[0] - x[1] + 3 * x[2] == 8)\n"
      "model.setObjective(5 * x[0] + 12 * x[1] + 4 * x[2], GRB.MAXIMIZE)\nmodel.optimize()\n"
      "print('%.6f %.6f %.6f' % (c1.Pi, c2.Pi, x[2].RC), c1.Pi == c1.Pi)\n");
  ASSERT_EQ(e.status, ExecStatus::kOk) << e.message << "\n" << e.output;
  EXPECT_NE(e.output.find("5.800000 -0.400000 -0.600000 True\n"), std::string::npos) << e.output;
  // The duals come with the program's own solve (the channel's reply carries them): no second
  // request, and that solve is the one scored.
  EXPECT_EQ(e.solve_requests, 1);
  EXPECT_TRUE(e.final_solve);
  ASSERT_TRUE(e.model);
  EXPECT_EQ(e.model->num_vars(), 3);
}

TEST(Modeling, TheSolvedModelIsTheFinalOne) {
  REQUIRE_PYTHON();
  Execution e = run(
      "import coptpy as cp\nfrom coptpy import COPT\nenv = cp.Envr()\n"
      "a = env.createModel('a')\nx = a.addVar(ub=2)\na.setObjective(x, COPT.MAXIMIZE)\na.solve()\n"
      "b = env.createModel('b')\ny = b.addVar()\nz = b.addVar()\n");
  ASSERT_EQ(e.status, ExecStatus::kOk) << e.message;
  EXPECT_EQ(e.message, "model from last solved model");
  ASSERT_TRUE(e.model);
  EXPECT_EQ(e.model->num_vars(), 1);
}

TEST(Modeling, PulpSolvesInTheSandboxWithoutAProcess) {
  REQUIRE_PULP();
  Execution e = run(
      "from pulp import *\nprob = LpProblem('k', LpMaximize)\nx = LpVariable('x', 0, 4, cat='Integer')\n"
      "y = LpVariable('y', 0)\nprob += 3 * x + 2 * y + 1\nprob += x + y <= 5.5, 'cap'\n"
      "print(prob.solve(), LpStatus[prob.status], value(prob.objective))\n"
      "print(prob.solve(PULP_CBC_CMD(msg=0)), value(prob.objective))\n"
      "try:\n    prob.solve(GLPK_CMD(msg=0))\nexcept PulpSolverError as err:\n    print('refused', err)\n");
  ASSERT_EQ(e.status, ExecStatus::kOk) << e.message << "\n" << e.output;
  EXPECT_EQ(e.output,
            "1 Optimal 16.0\n1 16.0\n"
            "refused PuLP solver GLPK_CMD is not available inside trex (use the default or PULP_CBC_CMD)\n");
  EXPECT_EQ(e.solve_requests, 2);
  EXPECT_EQ(e.message, "model from last solved model");
  ASSERT_TRUE(e.model);
  EXPECT_EQ(e.model->num_vars(), 2);
}

// Hostile: PuLP's own CBC class, taken from where install() did not replace it, starts a
// process; the sandbox forbids that, and the program is classed, the harness unharmed.
TEST(Modeling, PulpStartingASolverProcessIsContained) {
  REQUIRE_PULP();
  Execution e = run(
      "import pulp\nfrom pulp.apis.coin_api import COIN_CMD\nprob = pulp.LpProblem('k', pulp.LpMinimize)\n"
      "x = pulp.LpVariable('x', 1)\nprob += x\nprob.solve(COIN_CMD(path='/bin/sh', msg=0))\nprint('solved', x.varValue)\n");
  EXPECT_EQ(e.status, ExecStatus::kRuntimeError) << e.message << "\n" << e.output;
  EXPECT_EQ(e.output.find("solved 1"), std::string::npos) << e.output;
  EXPECT_EQ(e.solve_requests, 0);
}

// One solve per program: the channel's answer for the model the program solved is kept for
// scoring when that model is the final one, and only then.
TEST(Modeling, TheProgramsOwnSolveIsTheScoredOne) {
  REQUIRE_PYTHON();
  const std::string build =
      "import gurobipy as gp\nm = gp.Model()\nm.Params.OutputFlag = 0\nx = m.addVar(ub=3, name='x')\n"
      "m.setObjective(2 * x, gp.GRB.MAXIMIZE)\nm.optimize()\n";
  Execution same = run(build);
  ASSERT_EQ(same.status, ExecStatus::kOk) << same.message;
  ASSERT_TRUE(same.final_solve);
  EXPECT_EQ(same.final_solve->status, lp::SolveStatus::kOptimal);
  EXPECT_EQ(same.final_solve->objective, 6.0);
  Execution changed = run(build + "m.addConstr(x <= 1)\n");  // the final model is not the solved one
  ASSERT_EQ(changed.status, ExecStatus::kOk) << changed.message;
  EXPECT_FALSE(changed.final_solve);
  // Hostile: a forged final record after the solve is a different model; nothing is reused.
  Execution forged = run(build + "import json, os\nd = m._to_json()\nd['vars'][0][2] = 100.0\nd['from'] = 'x'\n"
                                  "json.dump(d, open('__trex_final.json', 'w'))\nos._exit(0)\n");
  ASSERT_EQ(forged.status, ExecStatus::kOk) << forged.message;
  EXPECT_FALSE(forged.final_solve);
  ASSERT_TRUE(forged.model);
  EXPECT_EQ(forged.model->num_vars(), 1);
}

TEST(Modeling, UnemulatedLibraryIsItsOwnClass) {
  REQUIRE_PYTHON();
  Execution e = run("import pyomo.environ as pyo\nm = pyo.ConcreteModel()\n");
  EXPECT_EQ(e.status, ExecStatus::kUnsupportedLibrary) << e.message;
  EXPECT_EQ(e.message, "unsupported-library: pyomo");
  Execution other = run("import nosuchmodule\n");  // not a modelling library: the program's error
  EXPECT_EQ(other.status, ExecStatus::kRuntimeError) << other.message;
}

TEST(Modeling, CallOutsideTheSurfaceIsItsOwnClass) {
  REQUIRE_PYTHON();
  Execution g = run("import gurobipy as gp\nm = gp.Model()\nx, y = m.addVar(), m.addVar()\nm.addGenConstrNorm(x, [y], 2)\n");
  EXPECT_EQ(g.status, ExecStatus::kUnsupportedCall) << g.message;
  EXPECT_EQ(g.message, "unsupported-call: norm general constraints (addGenConstrNorm) is not supported by trex");
  // A MAX over an unbounded variable has no big-M formulation: refused when the model is recorded.
  Execution big = run("import gurobipy as gp\nm = gp.Model()\nx, y = m.addVar(), m.addVar()\nm.addGenConstrMax(x, [y])\n");
  EXPECT_EQ(big.status, ExecStatus::kUnsupportedCall) << big.message;
  EXPECT_EQ(big.message.rfind("unsupported-call: general constraint MAX (GC0): an argument's upper bound is infinite", 0), 0u)
      << big.message;
  Execution c = run("import coptpy as cp\nm = cp.Envr().createModel()\nx = m.addVar()\nm.addSOS(1, [x])\n");
  EXPECT_EQ(c.status, ExecStatus::kUnsupportedCall) << c.message;
  EXPECT_EQ(c.message, "unsupported-call: coptpy: SOS constraints (addSOS) is not supported by trex");
  // The model's own error (a variable of another model) stays a runtime error.
  Execution own = run("import gurobipy as gp\na, b = gp.Model(), gp.Model()\nx = a.addVar()\nb.addConstr(x <= 1)\n");
  EXPECT_EQ(own.status, ExecStatus::kRuntimeError) << own.message;
}

// The runner imports traceback only when a program fails (start-up cost): a program that
// breaks that module still gets its error's last line and its class.
TEST(Modeling, ErrorsAreClassedEvenWithTracebackBroken) {
  REQUIRE_PYTHON();
  Execution e = run("import sys\nsys.modules['traceback'] = None\n1 / 0\n");
  EXPECT_EQ(e.status, ExecStatus::kRuntimeError) << e.message;
  EXPECT_EQ(e.message, "ZeroDivisionError: division by zero");
  Execution c = run("import sys\nsys.modules['traceback'] = None\nimport gurobipy as gp\nm = gp.Model()\n"
                    "m.addGenConstrNorm(m.addVar(), [m.addVar()], 2)\n");
  EXPECT_EQ(c.status, ExecStatus::kUnsupportedCall) << c.message;
  Execution ok = run("import gurobipy as gp\nm = gp.Model()\nx = m.addVar(name='x y')\nm.addConstr(x <= 1, 'c\u00e9')\n"
                     "m.write('model.lp')\nprint(open('model.lp').read().split('Subject To')[1].split('Bounds')[0].strip())\n");
  EXPECT_EQ(ok.status, ExecStatus::kOk) << ok.message;
  EXPECT_EQ(ok.output, "c_: x_y <= 1\n");  // names outside the LP alphabet become '_'
}

}  // namespace
}  // namespace trex::oreval
