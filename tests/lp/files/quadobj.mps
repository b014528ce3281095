* QUADOBJ: the upper triangle of Q in an objective c'x + 1/2 x'Qx (COIN-OR's and CPLEX's reading).
* Q = [2 1; 1 2]: min x^2 + xy + y^2 - 2x - 4y  s.t.  x + y <= 2: optimum -4 at x = 0, y = 2.
* qmatrix.mps is the same model with the whole Q.
NAME          QUADOBJ
ROWS
 N  obj
 L  c
COLUMNS
    x         obj       -2             c         1
    y         obj       -4             c         1
RHS
    RHS       c         2
QUADOBJ
    x         x         2
    x         y         1
    y         y         2
ENDATA
