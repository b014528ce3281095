/* The objective's constant term: glpsol's LP writer leaves it out of the objective and writes
   it as a comment, "\* constant term = 12.5 *\". Maximum 4 + 12.5 = 16.5 (x = 2, y = 0;
   glpsol agrees); without the constant it would read 4. */
var x >= 0, <= 2;
var y >= 0, integer;
maximize z: 2 * x - y + 12.5;
s.t. c: x + y <= 3;
end;
