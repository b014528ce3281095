* QMATRIX: the whole (symmetric) Q, both off-diagonal entries listed; same model as quadobj.mps.
* min x^2 + xy + y^2 - 2x - 4y  s.t.  x + y <= 2: optimum -4 at x = 0, y = 2.
NAME          QMATRIX
ROWS
 N  obj
 L  c
COLUMNS
    x         obj       -2             c         1
    y         obj       -4             c         1
RHS
    RHS       c         2
QMATRIX
    x         x         2
    x         y         1
    y         x         1
    y         y         2
ENDATA
