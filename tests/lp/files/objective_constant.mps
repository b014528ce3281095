* An RHS value on the objective row: COIN-OR's convention (trex's) makes it minus the
* objective constant; GLPK's glpsol adds it with the other sign.
* min x + (-10)  s.t.  x >= 1: optimum -9.
NAME          OBJCONST
OBJSENSE MIN
ROWS
 N  obj
 G  lo
COLUMNS
    x         obj       1              lo        1
RHS
    RHS       obj       10             lo        1
ENDATA
