// `trex demo` step: score two model completions for a small production problem, one in LP
// text and one as gurobipy Python run in the sandbox, and check their structural equivalence.
#include <cstdio>

#include "commands.h"
#include "trex/lp/lp_format.h"
#include "trex/lp/solver.h"
#include "trex/oreval/orgeval.h"
#include "trex/oreval/evaluate.h"
#include "trex/oreval/sandbox.h"
#include "trex/util/subprocess.h"

namespace trex::cli {

namespace {

using namespace trex::oreval;

// The question's answer: 3 tables (profit 30) and 4 chairs (profit 20) make 170.
constexpr const char* kLpCompletion =
    "The model:\n```lp\nMaximize\n profit: 30 tables + 20 chairs\nSubject To\n wood: 4 tables + 2 chairs <= 20\n"
    " hours: 2 tables + 3 chairs <= 18\nGeneral\n tables chairs\nEnd\n```\n";
constexpr const char* kPythonCompletion =
    "<python>\nfrom gurobipy import Model, GRB\nmodel = Model('furniture')\n"
    "t = model.addVar(vtype=GRB.INTEGER, name='t')\nc = model.addVar(vtype=GRB.INTEGER, name='c')\n"
    "model.setObjective(30 * t + 20 * c, GRB.MAXIMIZE)\nmodel.addConstr(2 * c + 4 * t <= 20)\n"
    "model.addConstr(3 * c + 2 * t <= 18)\nmodel.optimize()\n</python>";

int eval_demo() {
  Benchmark bench;
  bench.name = "demo";
  bench.items.push_back({"furniture", "How many tables and chairs?", {AnswerKind::kNumber, 170}, "", "", ""});
  EvalOptions o;
  o.exec.limits.wall_s = 10;
  // The demo's program is trex's own, not untrusted: it runs in whatever sandbox this
  // machine offers (printed below), where `trex eval run` would refuse a weak one.
  o.exec.allow_weak_sandbox = true;
  int failures = 0;
  std::printf("trex demo: evaluation (answer 170, mode absolute 1e-6)\n");
  ItemResult lp = evaluate_one(bench, bench.items[0], {"furniture", 0, kLpCompletion}, o);
  std::printf("  LP completion:     %s, objective %.6g (%s)\n", lp.status.c_str(), lp.objective.value_or(0), to_string(lp.error));
  failures += lp.error != ErrorClass::kCorrect;
  if (!program_available("/usr/bin/python3")) {
    std::printf("  Python completion: skipped (/usr/bin/python3 not installed)\n");
    return failures == 0 ? 0 : 1;
  }
  try {
    o.exec.python_dir = python_module_dir();
  } catch (const std::exception& e) {
    std::printf("  Python completion: %s\n", e.what());
    return 1;
  }
  ItemResult py = evaluate_one(bench, bench.items[0], {"furniture", 0, kPythonCompletion}, o);
  std::printf("  Python completion: %s, objective %.6g (%s) in %.2f s, sandbox: %s\n", py.status.c_str(),
              py.objective.value_or(0), to_string(py.error), py.seconds, sandbox_isolation().c_str());
  failures += py.error != ErrorClass::kCorrect;
  Execution a = execute(extract_formulation(kLpCompletion), "", o.exec);
  Execution b = execute(extract_formulation(kPythonCompletion), "", o.exec);
  std::string why;
  bool same = a.model && b.model && orgeval_equivalent(*a.model, *b.model, &why);
  std::printf("  ORGEval: the two formulations are %s\n", same ? "structurally equivalent" : ("different: " + why).c_str());
  failures += !same;
  return failures == 0 ? 0 : 1;
}

const DemoStepRegistration kEvalDemoStep(40, eval_demo);

}  // namespace

}  // namespace trex::cli
