var x >= 0;
maximize z: x
s.t. c: x <= 3;
end;
