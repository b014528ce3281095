"""Warms the warm interpreter (trex_eval_zygote.py) before it forks any child (issue 19).

A child forked from an interpreter that has never run the modelling code runs it cold: the
writer module is imported, and the interpreter specialises the module's bytecode and fills its
caches in the child, again for every program (each child's work is lost when it exits). Run
here once, in the interpreter every child is forked from, that work is inherited: on the 99
Bench4Opt reference programs it took the program's own part (compile, build, write, record)
from about 8 to about 4.5 ms of CPU per program (bench/oreval_stage_bench.py).

What is run is trex's own code on a model made up here; nothing of it stays where a program
can see it: the modelling core's "last created / last solved model" are reset, no parameter
is set, no file is written.
"""
import json

# The surface the reference programs use most (addVars with counts and index lists, addVar,
# sums and quicksum, every sense, both objective senses, variable types and bounds), written
# out as the LP text and as the runner's JSON record of the final model.
_PROGRAM = """
from gurobipy import GRB, Model, quicksum
costs = [3.0, 2.5, 4.25, 1.0]
caps = {"a": 10, "b": 7.5}
m = Model("warm-up")
x = m.addVars(len(costs), vtype=GRB.CONTINUOUS, name="x")
y = m.addVars(list(caps), range(2), vtype=GRB.BINARY, name="y")
z = m.addVar(lb=-5, ub=5, vtype=GRB.INTEGER, name="z")
w = m.addVar(name="w")
m.setObjective(sum(costs[i] * x[i] for i in range(len(costs))) + 2 * z - w + 1.5, GRB.MINIMIZE)
for i in range(len(costs)):
    m.addConstr(x[i] <= caps["a"] * (i + 1), name=f"cap_{i}")
    m.addConstr(x[i] - 0.5 * z >= -1, name=f"low_{i}")
for k in caps:
    m.addConstr(quicksum(y[k, j] for j in range(2)) == 1, name=f"one_{k}")
    m.addConstr(caps[k] * y[k, 0] + x[0] <= caps[k] + w, name=f"link_{k}")
m.addConstrs((x[i] + y["a", 1] >= 0 for i in range(2)), name="each")
m.addConstr(x.sum() <= 100)
m.update()
m.setObjective(quicksum(c * x[i] for i, c in enumerate(costs)) - z, GRB.MAXIMIZE)
lp = m._lp_text()
record = json.dumps(m._to_json(), allow_nan=False)
"""


_RUNNER_PROGRAM = """
from gurobipy import GRB, Model
model = Model("warm-up")
x = model.addVar(ub=1, vtype=GRB.BINARY, name="x")
model.setObjective(x, GRB.MAXIMIZE)
model.addConstr(x <= 1, name="c")
"""


def warm_up_runner(rounds=5):
    """Runs a small program `rounds` times through the runner (trex_eval_runner.main, as every
    child runs its program: the file read and compiled, run, the final model found, its record
    written). Until this, every child ran the runner's own code cold: its first calls, and the
    bytecode's warm-up counters written on pages shared with every sibling. Nothing touches
    the file system: the program is read from a memory file, the record goes to os.devnull
    (files made and removed here cost the interpreter's start tens of milliseconds on a busy
    disk). The modelling core's "last created / last solved model" are reset afterwards."""
    import os
    import sys

    import trex_eval_runner
    from trex_modeling import model as core

    argv = sys.argv
    fd = os.memfd_create("trex-warm-up", os.MFD_CLOEXEC)
    try:
        os.write(fd, _RUNNER_PROGRAM.encode())
        sys.argv = ["trex_eval_runner.py", "/proc/self/fd/%d" % fd]
        for _ in range(rounds):
            if trex_eval_runner.main(record=os.devnull) != 0:
                raise RuntimeError("the runner's warm-up program failed")
    finally:
        sys.argv = argv
        os.close(fd)
        core._last[0] = None
        core._solved[0] = None


def warm_up(rounds=5):
    """Runs the program `rounds` times (the interpreter specialises code that has run a few
    times), then forgets the models it made.

    Five rounds here and five of warm_up_runner (20 and 10 until session 29): the first round
    does most (imports, first calls); more rounds did not lower the children's CPU measurably
    while each cost every run's start (bench/results/oreval_s29/fix/rounds_ab.py, 99 programs,
    a child forked per program, lane, load 8-12, medians of pairs, B against 20 and 10: 5 and 5
    warm-up 13.6 -> 7.7 ms CPU, children 1.006x, 10 of 20 pairs lower; 3 and 3 1.005x, 2 and 3
    0.994x; 1 and 1 1.022x, higher in 10 of 12 pairs: too few). CPython 3.11 specialises a code
    object only after 8 calls or loop turns, so with 5 rounds code that runs once a program
    stays unspecialised here and in every child (its one call there makes 6, short of 8); 8
    and 8 against 5 and 5 (rounds_5_5_vs_8_8.txt, 20 pairs, lane, load 5.1-5.7) gave the
    children 0.995x by medians (12 of 20 pairs lower with 5 and 5) for 1.6 ms more warm-up:
    no gain shown, so 5 stays."""
    import trex_modeling.lp_writer  # noqa: F401  imported lazily by Model.write otherwise
    from trex_modeling import model as core

    code = compile(_PROGRAM, "<trex warm-up>", "exec")
    for _ in range(rounds):
        namespace = {"__name__": "__trex_warmup__", "json": json}
        exec(code, namespace)
    core._last[0] = None
    core._solved[0] = None
