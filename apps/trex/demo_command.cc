// trex demo: the main job end to end on built-in data, in seconds. It grows as parts land:
// first the lp layer (read a model in Gurobi's LP dialect, solve it with CBC, cross-check
// with GLPK in a separate process, round-trip it through MPS), then each registered step.
#include <cmath>
#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "trex/lp/lp_format.h"
#include "trex/lp/mps_format.h"
#include "trex/lp/solver.h"
#include "trex/util/progress.h"
#include "trex/util/subprocess.h"

namespace trex::cli {

namespace {

// A small production-planning MILP: three products made in whole batches on two machines,
// a raw-material contract with a range, and a setup decision per product.
constexpr const char* kDemoModel = R"(\ trex demo: weekly production plan
Maximize
 profit: 45 make[chairs] + 80 make[tables] + 120 make[desks]
         - 300 setup[chairs] - 500 setup[tables] - 800 setup[desks]
Subject To
 saw_hours:    2 make[chairs] + 4 make[tables] + 5 make[desks] <= 160
 finish_hours: 1 make[chairs] + 3 make[tables] + 4 make[desks] <= 120
 wood_contract: 40 <= 3 make[chairs] + 6 make[tables] + 8 make[desks] <= 260
 link_chairs:  make[chairs] - 40 setup[chairs] <= 0
 link_tables:  make[tables] - 30 setup[tables] <= 0
 link_desks:   make[desks] - 25 setup[desks] <= 0
Bounds
 0 <= make[chairs] <= 40
 make[tables] <= 30
 make[desks] <= 25
Generals
 make[chairs] make[tables] make[desks]
Binaries
 setup[chairs] setup[tables] setup[desks]
End
)";

int run_demo() {
  ProgressBar progress("demo", 4);
  lp::Model model = lp::read_lp(kDemoModel, "<demo>");
  progress.advance();

  lp::SolveOptions options;
  lp::SolveResult cbc = lp::make_solver("cbc")->solve(model, options);
  progress.advance();

  lp::SolveResult glpk;
  bool have_glpk = program_available("glpsol");
  if (have_glpk) glpk = lp::make_solver("glpk")->solve(model, options);
  progress.advance();

  lp::Model again = lp::read_mps(lp::write_mps(model), "<demo.mps>");
  std::string why;
  bool round_trip = lp::same_model(model, again, &why);
  progress.advance();
  progress.finish();

  std::printf("trex demo: weekly production plan (%d variables, %d integer, %d constraints)\n",
              model.num_vars(), model.num_integer_vars(), model.num_rows());
  std::printf("  cbc:  %s, profit %.2f in %.3f s\n", lp::to_string(cbc.status), cbc.objective,
              cbc.seconds);
  if (lp::has_solution(cbc.status))
    for (int j = 0; j < model.num_vars(); ++j)
      if (cbc.x[size_t(j)] != 0) std::printf("        %s = %g\n", model.var(j).name.c_str(), cbc.x[size_t(j)]);
  bool agree = true;
  if (have_glpk) {
    agree = glpk.status == cbc.status &&
            std::fabs(glpk.objective - cbc.objective) <= 1e-6 * std::max(1.0, std::fabs(cbc.objective));
    std::printf("  glpk: %s, profit %.2f in %.3f s (%s)\n", lp::to_string(glpk.status), glpk.objective,
                glpk.seconds, agree ? "agrees" : "DISAGREES");
  } else {
    std::printf("  glpk: skipped (glpsol not installed)\n");
  }
  std::printf("  LP -> MPS -> model round trip: %s%s\n", round_trip ? "identical" : "differs: ",
              round_trip ? "" : why.c_str());
  int status = lp::has_solution(cbc.status) && agree && round_trip ? 0 : 1;
  // The steps the other parts registered (a small corpus run, an evaluation, ...).
  for (const auto& [order, step] : registered_demo_steps())
    if (step() != 0) status = 1;
  return status;
}

}  // namespace

void add_demo_command(CLI::App& app, Action* action) {
  CLI::App* cmd = app.add_subcommand("demo", "Run trex end to end on built-in data (a few seconds)");
  cmd->callback([action] { *action = [] { return run_demo(); }; });
}

namespace {
const CommandRegistration kDemoRegistration(10, add_demo_command);
}  // namespace

}  // namespace trex::cli
