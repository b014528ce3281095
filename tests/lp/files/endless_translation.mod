# A model whose translation cannot finish on any machine: the parameter p sums 10^18 terms,
# which glpsol evaluates (in constant memory) while it generates constraint c. A test of the
# time limit on translation, whatever the machine's speed.
param p := sum{i in 1..1000000000, j in 1..1000000000} 1;
var x >= 0;
minimize obj: x;
s.t. c: x >= p;
end;
