* Fixed-format MPS: names with spaces, a blank name continuing the column above, $ comments.
* min x + 2y  s.t.  x + y <= 4,  x + 3y >= 6,  0 <= x <= 3, y >= 0.  Optimum 4 at x = 0, y = 2.
*234567890123456789012345678901234567890123456789012345678901
NAME          FIXED TEST
ROWS
 N  COST      $ the objective
 L  LIM 1     $ a row name with a space
 G  LIM 2
COLUMNS
    X ONE     COST      1.             LIM 1     1.
              LIM 2     1.             $ blank name: still X ONE
    Y TWO     COST      2.             LIM 1     1.
              LIM 2     3.
RHS
              LIM 1     4.             LIM 2     6.
BOUNDS
 UP BND       X ONE     3.
ENDATA
