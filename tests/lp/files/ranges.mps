* RANGES by the sign rule: E row with R > 0 is [rhs, rhs + R], with R < 0 [rhs + R, rhs];
* L row [rhs - |R|, rhs]; G row [rhs, rhs + |R|].
* max x + y + z + w, each row holding one variable: x in [4, 6], y in [2, 5], z in [1, 3],
* w in [7, 9]: optimum 23.
NAME          RANGES
OBJSENSE MAX
ROWS
 N  obj
 E  epos
 E  eneg
 L  le
 G  ge
COLUMNS
    x         obj       1              epos      1
    y         obj       1              eneg      1
    z         obj       1              le        1
    w         obj       1              ge        1
RHS
    RHS       epos      4              eneg      5
    RHS       le        3              ge        7
RANGES
    RNG       epos      2              eneg      -3
    RNG       le        -2             ge        2
ENDATA
