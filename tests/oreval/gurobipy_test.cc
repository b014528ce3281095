// The gurobipy-compatible module on the constructs model-written programs use: tupledict
// sums and products, addConstrs keys, numpy coefficients, reversed comparisons, attributes,
// an infeasible model, errors; run in the sandbox, solved by trex.
#include <gtest/gtest.h>

#include "trex/oreval/execute.h"
#include "trex/util/subprocess.h"

namespace trex::oreval {
namespace {

constexpr const char* kProgram = R"PY(from gurobipy import *
import numpy as np
I, J = range(3), range(2)
cost = {(i, j): 1 + i + 2 * j for i in I for j in J}
m = Model("transport")
m.Params.OutputFlag = 0
m.setParam('TimeLimit', 30)
x = m.addVars(I, J, lb=0, name="x")
y = m.addVars(["a", "b"], vtype=GRB.BINARY, name="y")
m.addConstrs((x.sum(i, '*') >= 1 for i in I), name="demand")
cap = m.addConstrs((x.sum('*', j) <= 2 * y[k] for j, k in zip(J, ["a", "b"])), name="cap")
coef = np.array([1.5, 2.5])
m.addConstr(quicksum(coef[j] * x[0, j] for j in J) >= np.float64(1.0))
m.addConstr(2 <= x[1, 0] + x[1, 1] + 1, "lower")
m.setObjective(x.prod(cost) + 10 * y.sum(), GRB.MINIMIZE)
m.optimize()
assert m.status == GRB.Status.OPTIMAL == GRB.OPTIMAL
print("obj %.6g" % m.objVal, "%.6g" % m.ObjVal)
print(sorted(k for k in cap.keys()))
vals = m.getAttr('X', x)
print(len(vals), round(sum(vals.values()) if isinstance(vals, dict) else sum(vals), 6))
for v in m.getVars():
    if v.X > 1e-9:
        print(v.VarName, round(v.x, 6))
e = LinExpr()
e += 2 * x[0, 0]
e.addTerms([1.0], [x[2, 1]])
print(round(e.getValue(), 6), m.NumVars, m.NumConstrs)
m2 = Model()
z = m2.addVar(ub=1)
m2.addConstr(z >= 2)
m2.setObjective(z, GRB.MAXIMIZE)
m2.optimize()
print("second", m2.Status == GRB.INFEASIBLE)
try:
    z.X
except GurobiError as err:
    print("no X:", err.errno)
model = m
)PY";

TEST(Gurobipy, CommonApiSurface) {
  if (!program_available("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not installed";
  ExecOptions o;
  o.python_dir = std::string(TREX_SOURCE_DIR) + "/python";
  o.limits.wall_s = 30;
  o.allow_weak_sandbox = true;  // trex's own program, where a layer may be missing
  Execution e = execute({CodeKind::kPython, kProgram}, "", o);
  ASSERT_EQ(e.status, ExecStatus::kOk) << e.message << "\n" << e.output;
  EXPECT_EQ(e.output,
            "obj 28 28\n"
            "[(0, 'a'), (1, 'b')]\n"
            "6 3.0\n"
            "x[0,1] 1.0\n"
            "x[1,0] 1.0\n"
            "x[2,0] 1.0\n"
            "y[a] 1.0\n"
            "y[b] 1.0\n"
            "0.0 8 7\n"
            "trex: infeasible\n"
            "second True\n"
            "no X: 10005\n");
  EXPECT_EQ(e.solve_requests, 2);
  ASSERT_TRUE(e.model);  // the variable `model`
  EXPECT_EQ(e.model->num_vars(), 8);
  EXPECT_EQ(e.model->num_rows(), 7);
  EXPECT_EQ(e.message, "model from variable model");
}

}  // namespace
}  // namespace trex::oreval
