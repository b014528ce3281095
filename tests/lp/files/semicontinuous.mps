* A semi-continuous column: x is 0 or in [2, 8].
* min x + 3y  s.t.  x + y >= 1: without SC x = 1 (1); with it x = 2 (2).
NAME          SEMICONT
ROWS
 N  obj
 G  demand
COLUMNS
    x         obj       1              demand    1
    y         obj       3              demand    1
RHS
    RHS       demand    1
BOUNDS
 LO BND       x         2
 SC BND       x         8
ENDATA
