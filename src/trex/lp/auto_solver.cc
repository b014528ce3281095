// "auto": the back end that fits the model. CBC/CLP is the fastest for what it can solve
// (LPs, MILPs, convex QPs); everything quadratic beyond that goes to the spatial solver.
#include "trex/lp/convexity.h"
#include "trex/lp/solver.h"

namespace trex::lp {

namespace {

bool cbc_can_solve(const Model& model) {
  if (model.has_quadratic_constraints()) return false;
  if (!model.has_quadratic_objective()) return true;
  return !model.is_mip() && objective_is_convex(model);
}

class AutoSolver final : public Solver {
 public:
  std::string name() const override { return "auto"; }
  std::string version() const override { return cbc_->version() + "; " + sbb_->version(); }
  SolveResult solve(const Model& model, const SolveOptions& options) const override {
    model.validate();
    return cbc_can_solve(model) ? cbc_->solve(model, options) : sbb_->solve(model, options);
  }

 private:
  std::unique_ptr<Solver> cbc_ = make_cbc_solver();
  std::unique_ptr<Solver> sbb_ = make_spatial_solver();
};

}  // namespace

std::unique_ptr<Solver> make_auto_solver() { return std::make_unique<AutoSolver>(); }

}  // namespace trex::lp
