* SOS sets (COIN-OR layout, CPLEX's "S1 SOS name priority" headers).
* max 3x1 + 2x2 + 4x3 + y1 + 2y2 + 3y3 + y4,  x1 + x2 + x3 <= 10,  x <= 5,  y <= 1.
* S1 on x: one x nonzero (x3 = 5: 20). S2 on y: two adjacent (y2 = y3 = 1: 5). Optimum 25;
* without the sets it would be 3*5 + 4*5 + 7 = 42.
NAME          SOS
OBJSENSE MAX
ROWS
 N  obj
 L  xsum
COLUMNS
    x1        obj       3              xsum      1
    x2        obj       2              xsum      1
    x3        obj       4              xsum      1
    y1        obj       1
    y2        obj       2
    y3        obj       3
    y4        obj       1
RHS
    RHS       xsum      10
BOUNDS
 UP BND       x1        5
 UP BND       x2        5
 UP BND       x3        5
 UP BND       y1        1
 UP BND       y2        1
 UP BND       y3        1
 UP BND       y4        1
SOS
 S1 SOS       sx        2
    sx        x1        1
    sx        x2        2
    sx        x3        3
 S2 SOS       sy        1
    y1        10
    y2        20
    y3        30
    y4        40
ENDATA
