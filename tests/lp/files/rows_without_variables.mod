/* Constraints but no variables: glpsol's LP translation drops rows without columns (and the
   constant objective), so trex refuses the model rather than solve something else. */
param a := 2;
minimize z: a;
s.t. c: a >= 3;
end;
