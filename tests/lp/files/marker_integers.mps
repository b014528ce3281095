* Integer markers without bounds: COIN-OR and GLPK read such columns as [0, 1], CPLEX as
* [0, inf). A bound line on a marker column drops the default 1 (d: LO 0 only -> [0, inf)).
* min -5a - 4b - 3c - d  s.t.  2a + 3b + c + 10d <= 5
*   [0, 1] reading:   a = b = 1, c = d = 0: -9
*   [0, inf) reading: c = 5: -15
NAME          MARKERS
ROWS
 N  obj
 L  cap
COLUMNS
    M1        'MARKER'                 'INTORG'
    a         obj       -5             cap       2
    b         obj       -4             cap       3
    c         obj       -3             cap       1
    d         obj       -1             cap       10
    M2        'MARKER'                 'INTEND'
RHS
    RHS       cap       5
BOUNDS
 LO BND       d         0
ENDATA
