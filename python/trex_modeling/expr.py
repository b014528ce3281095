"""Expressions: variables, linear and quadratic expressions, constraints-to-be, and the
tupledict/tuplelist/multidict containers, shared by every emulated library."""

import numbers

from .errors import ModelingError

INF = 1e100


def _is_number(v):
    # float and int first: an ABC isinstance check costs a call into abc's cache, and these
    # checks run for nearly every term a program builds. bool is an int subclass, also a number.
    t = type(v)
    return t is float or t is int or isinstance(v, numbers.Number)


def _num(v):
    f = float(v)
    if f != f:  # NaN, as math.isnan without the call
        raise ModelingError(10003, "Invalid argument: NaN")
    return f


# --- expressions ---------------------------------------------------------------------------

def _linexpr(vars_, coefs, const):
    """A LinExpr holding these lists (not copies) and constant, without __init__'s dispatch on
    its arguments: the operators below make one or two per term a program writes (about 350
    per Bench4Opt reference program), and LinExpr(other) also copied through that dispatch."""
    e = _new_object(LinExpr)
    e._vars = vars_
    e._coefs = coefs
    e._const = const
    return e


_new_object = object.__new__


class Var:
    __array_ufunc__ = None  # numpy scalars defer to our operators
    __array_priority__ = 100
    __slots__ = ("_model", "_index")

    def __init__(self, model, index):
        self._model = model
        self._index = index

    # The C slot, not a Python method: every dict keyed by variables (merging a row's terms,
    # a record's positions) hashes each one, about 200 times a Bench4Opt reference program. By
    # identity, as before; the values differ from id(), which nothing here orders by (dicts
    # keep insertion order; no set of variables is iterated).
    __hash__ = object.__hash__

    def _rec(self):
        return self._model._vrec[self._index]

    def __getattr__(self, name):
        return self._model._var_attr(self, name)

    def __setattr__(self, name, value):
        if name in Var.__slots__:
            object.__setattr__(self, name, value)
        else:
            self._model._set_var_attr(self, name, value)

    def getAttr(self, name):
        return self._model._var_attr(self, name)

    def setAttr(self, name, value):
        self._model._set_var_attr(self, name, value)

    def sameAs(self, other):
        return self is other

    def index(self):
        return self._index

    def __repr__(self):
        return "<%s.Var %s>" % (self._model._api_name, self._rec()[0])

    # arithmetic: the common cases (a number or another variable) make their one LinExpr
    # directly; everything else goes through the variable as an expression, as before.
    def _lin(self):
        return _linexpr([self], [1.0], 0.0)

    def __add__(self, o):
        t = type(o)
        if t is Var:
            return _linexpr([self, o], [1.0, 1.0], 0.0)
        if t is float or t is int:
            return _linexpr([self], [1.0], 0.0 + 1.0 * _num(o))
        return self._lin().__add__(o)

    def __radd__(self, o):
        t = type(o)
        if t is float or t is int:  # sum() starts from 0
            return _linexpr([self], [1.0], 0.0 + 1.0 * _num(o))
        return self._lin().__radd__(o)

    def __sub__(self, o):
        t = type(o)
        if t is Var:
            return _linexpr([self, o], [1.0, -1.0], 0.0)
        if t is float or t is int:
            return _linexpr([self], [1.0], 0.0 + -1.0 * _num(o))
        return self._lin().__sub__(o)

    def __rsub__(self, o): return self._lin().__rsub__(o)

    def __mul__(self, o):
        t = type(o)
        if t is float or t is int:
            f = _num(o)
            return _linexpr([self], [1.0 * f], 0.0 * f)
        return self._lin().__mul__(o)

    __rmul__ = __mul__

    def __truediv__(self, o): return self._lin().__truediv__(o)
    def __neg__(self): return _linexpr([self], [-1.0], -0.0)
    def __pos__(self): return self._lin()
    def __pow__(self, p): return self._lin().__pow__(p)
    def __le__(self, o): return TempConstr(self._lin(), "<", o)
    def __ge__(self, o): return TempConstr(self._lin(), ">", o)
    def __eq__(self, o): return TempConstr(self._lin(), "=", o)


_set_var_model = Var._model.__set__
_set_var_index = Var._index.__set__


def _var(model, index):
    """Var(model, index) without __init__'s two assignments through Var.__setattr__ (a Python
    method each): the slots set directly, one variable per addVar or addVars key."""
    v = _new_object(Var)
    _set_var_model(v, model)
    _set_var_index(v, index)
    return v


class LinExpr:
    __array_ufunc__ = None
    __array_priority__ = 100
    # No __dict__: gurobipy's LinExpr (a compiled class) has none either, and a program makes
    # hundreds of these.
    __slots__ = ("_vars", "_coefs", "_const")

    def __init__(self, arg1=None, arg2=None):
        self._vars = []
        self._coefs = []
        self._const = 0.0
        if arg1 is None:
            return
        if arg2 is not None:  # LinExpr(coefs, vars)
            if _is_number(arg1):
                arg1, arg2 = [arg1], [arg2]
            for c, v in zip(arg1, arg2):
                self._vars.append(v)
                self._coefs.append(_num(c))
        elif isinstance(arg1, Var):
            self._vars.append(arg1)
            self._coefs.append(1.0)
        elif isinstance(arg1, LinExpr):
            self._vars = list(arg1._vars)
            self._coefs = list(arg1._coefs)
            self._const = arg1._const
        elif _is_number(arg1):
            self._const = _num(arg1)
        else:  # list of (coef, var)
            for c, v in arg1:
                self._vars.append(v)
                self._coefs.append(_num(c))

    def copy(self):
        return _linexpr(self._vars[:], self._coefs[:], self._const)

    def size(self): return len(self._vars)
    def getVar(self, i): return self._vars[i]
    def getCoeff(self, i): return self._coefs[i]
    def getConstant(self): return self._const

    def getValue(self):
        return self._const + sum(c * v._model._value(v) for c, v in zip(self._coefs, self._vars))

    def addTerms(self, coefs, vars):
        if _is_number(coefs):
            coefs, vars = [coefs], [vars]
        for c, v in zip(coefs, vars):
            self._vars.append(v)
            self._coefs.append(_num(c))

    def addConstant(self, c):
        self._const += _num(c)

    def add(self, expr, mult=1.0):
        self._iadd(expr, _num(mult))

    def clear(self):
        self._vars, self._coefs, self._const = [], [], 0.0

    def remove(self, item):
        if isinstance(item, Var):
            keep = [(c, v) for c, v in zip(self._coefs, self._vars) if v is not item]
            self._coefs = [c for c, _ in keep]
            self._vars = [v for _, v in keep]
        else:
            del self._vars[item]
            del self._coefs[item]

    def _iadd(self, o, mult=1.0):
        if isinstance(o, Var):
            self._vars.append(o)
            self._coefs.append(mult)
        elif isinstance(o, QuadExpr):
            raise TypeError("internal: quadratic added to linear in place")
        elif isinstance(o, LinExpr):
            self._vars.extend(o._vars)
            if mult == 1.0:
                self._coefs.extend(o._coefs)
            else:
                self._coefs.extend(c * mult for c in o._coefs)
            self._const += mult * o._const
        elif _is_number(o):
            self._const += mult * _num(o)
        else:
            return NotImplemented
        return self

    def __add__(self, o):
        # A new expression of this one's terms, then o's (_iadd's cases, the two common ones
        # written out: each makes the same lists and constant _iadd would).
        t = type(o)
        if t is Var:
            return _linexpr(self._vars + [o], self._coefs + [1.0], self._const)
        if t is LinExpr:
            return _linexpr(self._vars + o._vars, self._coefs + o._coefs, self._const + 1.0 * o._const)
        if isinstance(o, QuadExpr):
            return o.__radd__(self)
        r = _linexpr(self._vars[:], self._coefs[:], self._const)
        return r._iadd(o)

    def __radd__(self, o):
        return self.__add__(o)

    def __iadd__(self, o):
        if isinstance(o, QuadExpr):
            return o.__radd__(self)
        return self._iadd(o)

    def __sub__(self, o):
        if isinstance(o, QuadExpr):
            return (-o).__radd__(self)
        r = _linexpr(self._vars[:], self._coefs[:], self._const)
        return r._iadd(o, -1.0)

    def __isub__(self, o):
        if isinstance(o, QuadExpr):
            return (-o).__radd__(self)
        return self._iadd(o, -1.0)

    def __rsub__(self, o):
        return (-self).__add__(o)

    def __neg__(self):
        return _linexpr(self._vars[:], [-c for c in self._coefs], -self._const)

    def __pos__(self):
        return _linexpr(self._vars[:], self._coefs[:], self._const)

    def __mul__(self, o):
        if _is_number(o):
            f = _num(o)
            return _linexpr(self._vars[:], [c * f for c in self._coefs], self._const * f)
        if isinstance(o, (Var, LinExpr)) and not isinstance(o, QuadExpr):
            other = o._lin() if isinstance(o, Var) else o
            q = QuadExpr()
            for c1, v1 in zip(self._coefs, self._vars):
                for c2, v2 in zip(other._coefs, other._vars):
                    q._qterms.append((c1 * c2, v1, v2))
                if other._const:
                    q._lin._iadd(v1, c1 * other._const)
            if self._const:
                q._lin._iadd(other, self._const)
            return q
        return NotImplemented

    def __rmul__(self, o):
        return self.__mul__(o)

    def __imul__(self, o):
        return self.__mul__(o)

    def __truediv__(self, o):
        if _is_number(o):
            return self.__mul__(1.0 / _num(o))
        return NotImplemented

    def __pow__(self, p):
        if p == 2:
            return self * self
        if p == 1:
            return LinExpr(self)
        raise ModelingError(10003, "only powers 1 and 2 of an expression are supported")

    def __le__(self, o): return TempConstr(self, "<", o)
    def __ge__(self, o): return TempConstr(self, ">", o)
    def __eq__(self, o): return TempConstr(self, "=", o)
    __hash__ = object.__hash__

    def __repr__(self):
        parts = ["%g %s" % (c, v._rec()[0]) for c, v in zip(self._coefs, self._vars)]
        if self._const or not parts:
            parts.append("%g" % self._const)
        return "<LinExpr: %s>" % " + ".join(parts)

    def _merged(self):
        """The terms with each variable once, in first-appearance order, zeros dropped: what
        Gurobi stores (and writes) for an expression with repeated variables."""
        out = {}
        for c, v in zip(self._coefs, self._vars):
            out[v] = out.get(v, 0.0) + c
        return [(v, c) for v, c in out.items() if c != 0]


class QuadExpr(LinExpr):
    __slots__ = ("_lin", "_qterms")

    def __init__(self, expr=None):
        LinExpr.__init__(self)
        self._lin = LinExpr(expr) if expr is not None and not isinstance(expr, QuadExpr) else LinExpr()
        self._qterms = []  # (coef, var1, var2)
        if isinstance(expr, QuadExpr):
            self._lin = LinExpr(expr._lin)
            self._qterms = list(expr._qterms)

    def copy(self):
        return QuadExpr(self)

    def size(self): return len(self._qterms)
    def getLinExpr(self): return self._lin
    def getVar1(self, i): return self._qterms[i][1]
    def getVar2(self, i): return self._qterms[i][2]
    def getCoeff(self, i): return self._qterms[i][0]
    def getConstant(self): return self._lin._const

    def getValue(self):
        return self._lin.getValue() + sum(c * a._model._value(a) * b._model._value(b) for c, a, b in self._qterms)

    def addTerms(self, coefs, vars, vars2=None):
        if vars2 is None:
            return self._lin.addTerms(coefs, vars)
        if _is_number(coefs):
            coefs, vars, vars2 = [coefs], [vars], [vars2]
        for c, a, b in zip(coefs, vars, vars2):
            self._qterms.append((_num(c), a, b))

    def addConstant(self, c):
        self._lin.addConstant(c)

    def add(self, expr, mult=1.0):
        r = self.__add__(expr * mult)
        self._lin, self._qterms = r._lin, r._qterms

    def _combine(self, o, sign):
        r = QuadExpr(self)
        if isinstance(o, QuadExpr):
            r._lin._iadd(o._lin, sign)
            r._qterms.extend((c * sign, a, b) for c, a, b in o._qterms)
        elif isinstance(o, (Var, LinExpr)) or _is_number(o):
            r._lin._iadd(o, sign)
        else:
            return NotImplemented
        return r

    def __add__(self, o): return self._combine(o, 1.0)
    def __radd__(self, o): return self._combine(o, 1.0)
    def __iadd__(self, o): return self._combine(o, 1.0)
    def __sub__(self, o): return self._combine(o, -1.0)
    def __isub__(self, o): return self._combine(o, -1.0)
    def __rsub__(self, o): return (-self)._combine(o, 1.0)

    def __neg__(self):
        r = QuadExpr()
        r._lin = -self._lin
        r._qterms = [(-c, a, b) for c, a, b in self._qterms]
        return r

    def __mul__(self, o):
        if _is_number(o):
            f = _num(o)
            r = QuadExpr()
            r._lin = self._lin * f
            r._qterms = [(c * f, a, b) for c, a, b in self._qterms]
            return r
        raise ModelingError(10003, "products of degree above 2 are not supported")

    def __rmul__(self, o): return self.__mul__(o)
    def __truediv__(self, o): return self.__mul__(1.0 / _num(o))

    def __pow__(self, p):
        raise ModelingError(10003, "powers of a quadratic expression are not supported")

    def _merged_q(self):
        """Quadratic terms with x*y and y*x as one (ordered by variable creation), zeros dropped."""
        out = {}
        for c, a, b in self._qterms:
            key = (a, b) if a._index <= b._index else (b, a)
            out[key] = out.get(key, 0.0) + c
        return [(a, b, c) for (a, b), c in out.items() if c != 0]


class TempConstr:
    def __init__(self, lhs, sense, rhs):
        self._lhs, self._sense, self._rhs = lhs, sense, rhs

    def __bool__(self):
        raise ModelingError(10003, "a constraint has no truth value (chained comparisons are not supported)")

    def __rshift__(self, other):
        """(b == 1) >> (x + y <= 3): an indicator constraint (general.py)."""
        from .general import indicator_of
        return indicator_of(self, other)


def quicksum(iterable):
    e = _linexpr([], [], 0.0)
    vars_, coefs = e._vars, e._coefs
    quad = None
    for t in iterable:
        # _iadd's two common cases written out (same lists, same constant), the rest through it.
        tt = type(t)
        if tt is Var:
            vars_.append(t)
            coefs.append(1.0)
        elif tt is LinExpr:
            vars_ += t._vars
            coefs += t._coefs
            e._const += 1.0 * t._const
        elif isinstance(t, QuadExpr):
            quad = t if quad is None else quad + t
        else:
            e._iadd(t)
    return e if quad is None else quad + e


# --- tupledict and tuplelist ---------------------------------------------------------------

def _matches(key, pattern):
    if not isinstance(key, tuple):
        key = (key,)
    if len(pattern) != len(key):
        return False
    for k, p in zip(key, pattern):
        if p == "*":
            continue
        if isinstance(p, (list, set, tuple)) and not isinstance(k, tuple):
            if k not in p:
                return False
        elif k != p:
            return False
    return True


class tupledict(dict):
    def select(self, *pattern):
        if not pattern:
            return list(self.values())
        return [v for k, v in self.items() if _matches(k, pattern)]

    def sum(self, *pattern):
        return quicksum(self.select(*pattern))

    def prod(self, coeff, *pattern):
        e = LinExpr()
        for k, v in self.items():
            if pattern and not _matches(k, pattern):
                continue
            if k in coeff:
                e._iadd(v, _num(coeff[k]))
        return e

    def clean(self):
        pass


class tuplelist(list):
    def select(self, *pattern):
        return tuplelist(t for t in self if _matches(t, pattern))


def multidict(data):
    keys = tuplelist(data.keys())
    first = next(iter(data.values()), None)
    if isinstance(first, (list, tuple)):
        n = len(first)
        dicts = [dict() for _ in range(n)]
        for k, vals in data.items():
            for i in range(n):
                dicts[i][k] = vals[i]
        return [keys] + dicts
    return [keys, dict(data)]


