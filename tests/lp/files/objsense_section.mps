* OBJSENSE as a section with the sense on the next line; same model as objsense_line.mps.
* max x + y  s.t.  x + 2y <= 4,  3x + y <= 6: optimum 2.8 at x = 1.6, y = 1.2.
NAME          SENSE
OBJSENSE
    MAXIMIZE
ROWS
 N  obj
 L  r1
 L  r2
COLUMNS
    x         obj       1              r1        1
    x         r2        3
    y         obj       1              r1        2
    y         r2        1
RHS
    RHS       r1        4              r2        6
ENDATA
