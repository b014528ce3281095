/* A model of display statements only, as GLPK's cal.mod: no rows, no columns. glpsol calls it
   optimal with objective 0. */
param n := 3;
printf "n = %d\n", n;
end;
