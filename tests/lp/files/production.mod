/* A small MathProg model with its data in production.dat: maximize profit of two products
   under machine hours. Optimum 2300: 5 chairs and 30 tables (glpsol agrees). */
set PRODUCTS;
param profit{PRODUCTS};
param hours{PRODUCTS};
param capacity;
var make{p in PRODUCTS} >= 0, integer;
maximize total: sum{p in PRODUCTS} profit[p] * make[p];
s.t. machine: sum{p in PRODUCTS} hours[p] * make[p] <= capacity;
s.t. demand{p in PRODUCTS}: make[p] <= 30;
end;
