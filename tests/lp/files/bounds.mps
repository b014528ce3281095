* Every bound type. up_neg: UP -5 with the default lower bound makes it [-inf, -5];
* mi: MI keeps the upper bound 8; sc: SC 6 after LO 2 is 0 or [2, 6].
* Read, not solved (up_neg makes the minimum unbounded).
NAME          BOUNDS
ROWS
 N  obj
 L  all
COLUMNS
    up_neg    obj       1              all       1
    mi        obj       -1             all       1
    pl        obj       1              all       1
    bv        obj       -1             all       1
    li        obj       1              all       1
    ui        obj       -1             all       1
    fr        obj       0              all       1
    fx        obj       1              all       1
    sc        obj       1              all       1
    lo        obj       1              all       1
RHS
    RHS       all       1000
BOUNDS
 UP BND       up_neg    -5
 UP BND       mi        8
 MI BND       mi
 LO BND       pl        -3
 PL BND       pl
 BV BND       bv
 LI BND       li        2
 UI BND       ui        7
 FR BND       fr
 FX BND       fx        3.5
 LO BND       sc        2
 SC BND       sc        6
 LO BND       lo        -1
ENDATA
