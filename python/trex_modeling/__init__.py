"""The modelling core shared by trex's gurobipy- and coptpy-compatible modules.

One expression algebra (Var, LinExpr, QuadExpr, quicksum, tupledict, tuplelist, multidict),
one model store (variables, rows, objective, removal, the JSON record trex reads) and one
way to solve (solve.py: the sandbox channel inside `trex eval`, the trex binary outside it).
The skins (gurobipy/, coptpy/) add only what differs between the libraries: constants,
status codes, attribute and method names, the error class and the log line.
"""

from .errors import ModelingError, AttrError, UnsupportedCall
from .expr import Var, LinExpr, QuadExpr, TempConstr, quicksum, tupledict, tuplelist, multidict, INF
from .model import ModelCore, Constr, last_model, last_solved
