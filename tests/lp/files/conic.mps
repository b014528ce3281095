* A cone (CSECTION), which no trex back end solves: refused by name.
NAME          CONE
ROWS
 N  obj
 L  c1
COLUMNS
    x         obj       1              c1        1
    y         obj       1              c1        1
RHS
    RHS       c1        1
CSECTION      cone1     0.0            QUAD
    x
    y
ENDATA
