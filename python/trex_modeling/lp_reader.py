"""gurobipy.read for LP files: the format Gurobi and this module write (lp_writer.py).

Sections Minimize/Maximize, Subject To, Bounds, Binaries, Generals, End (and their CPLEX
spellings); tokens separated by white space as both writers separate them; an objective label
is optional; quadratic parts in "[ ... ]" (with "/ 2" in the objective), "x ^2" or "x * y".
Variables are created in the order they first appear, as Gurobi's reader does. A variable
named "Constant" stays a variable, as it is in the file. Indicator rows ("b = 1 -> x + y <= 3"),
the SOS section ("s0: S1 :: x:1 y:2") and the General Constraints section's MAX, MIN, ABS, AND
and OR ("GC0: r = MAX ( x , y , 3 )") are read as lp_writer.py writes them; semi-continuous
sections and other general constraints are refused with the section or line named.
"""

import re

from .errors import ModelingError, UnsupportedCall
from .expr import INF

_SECTIONS = [
    (re.compile(r"^(maximize|maximise|maximum|max)$", re.I), "max"),
    (re.compile(r"^(minimize|minimise|minimum|min)$", re.I), "min"),
    (re.compile(r"^(subject\s+to|such\s+that|st|s\.t\.)$", re.I), "rows"),
    (re.compile(r"^bounds?$", re.I), "bounds"),
    (re.compile(r"^(binaries|binary|bin)$", re.I), "bin"),
    (re.compile(r"^(generals|general|gen|integers?)$", re.I), "int"),
    (re.compile(r"^sos$", re.I), "sos"),
    (re.compile(r"^(general\s+constraints?|genconstrs?)$", re.I), "general"),
    (re.compile(r"^(semi-continuous|semis|semi|sos[12]|pwlobj|lazy\s+constraints|user\s+cuts)$", re.I), "unsupported"),
    (re.compile(r"^end$", re.I), "end"),
]
_OPS = {"<=": "<", "=<": "<", "<": "<", ">=": ">", "=>": ">", ">": ">", "=": "="}


def _number(tok):
    t = tok.lower()
    if t in ("inf", "+inf", "infinity", "+infinity"):
        return INF
    if t in ("-inf", "-infinity"):
        return -INF
    if t.lstrip("+-")[:1] not in "0123456789." or t in ("+", "-", "."):
        return None  # a name such as "nan" or "e" is a variable, not a number
    try:
        return float(tok)
    except ValueError:
        return None


class _Reader:
    def __init__(self, model, path):
        self.m = model
        self.path = path
        self.vars = {}

    def fail(self, line, what):
        raise ModelingError(10012, "%s, line %d: %s" % (self.path, line, what))

    def var(self, name):
        v = self.vars.get(name)
        if v is None:
            v = self.vars[name] = self.m._new_var(0.0, INF, 0.0, "C", name)
        return v

    def expr(self, toks, line, objective=False):
        """(linear [(Var, coef)], quadratic [(coef, Var, Var)], constant) of a token list."""
        lin, quad, const = [], [], 0.0
        sign, coef, in_q, q_start = 1.0, None, False, 0
        i = 0
        while i < len(toks):
            t = toks[i]
            if t in ("+", "-"):
                sign = sign * (-1.0 if t == "-" else 1.0)
            elif t == "[":
                in_q, q_start = True, len(quad)
            elif t == "]":
                in_q = False
                if toks[i + 1:i + 3] == ["/", "2"]:
                    quad[q_start:] = [(c / 2, a, b) for c, a, b in quad[q_start:]]
                    i += 2
            elif _number(t) is not None:
                coef = _number(t) if coef is None else coef * _number(t)
            else:
                c = sign * (1.0 if coef is None else coef)
                if t.startswith("^") or t == "*":
                    self.fail(line, "a product without a first factor")
                v = self.var(t)
                if in_q and i + 1 < len(toks) and toks[i + 1] in ("^2", "^"):
                    i += 1 if toks[i + 1] == "^2" else 2
                    quad.append((c, v, v))
                elif in_q and i + 2 < len(toks) and toks[i + 1] == "*":
                    quad.append((c, v, self.var(toks[i + 2])))
                    i += 2
                elif in_q:
                    self.fail(line, "a linear term inside [ ]")
                else:
                    lin.append((v, c))
                sign, coef = 1.0, None
            i += 1
        if coef is not None:
            const += sign * coef
        return lin, quad, const

    def rows(self, items):
        toks = [(t, ln) for ln, line in items for t in line.split()]
        i, n = 0, len(toks)
        while i < n:
            start_line = toks[i][1]
            name = ""
            if toks[i][0].endswith(":"):
                name = toks[i][0][:-1]
                i += 1
            elif i + 1 < n and toks[i + 1][0] == ":":
                name = toks[i][0]
                i += 2
            if i + 3 < n and toks[i + 1][0] == "=" and toks[i + 3][0] == "->":  # an indicator
                binvar, val = self.var(toks[i][0]), _number(toks[i + 2][0])
                if val not in (0.0, 1.0):
                    self.fail(start_line, "an indicator's condition must be 0 or 1")
                i += 4
                body = []
                while i < n and toks[i][0] not in _OPS:
                    body.append(toks[i][0])
                    i += 1
                if i + 1 >= n or _number(toks[i + 1][0]) is None:
                    self.fail(start_line, "an indicator without a numeric right-hand side")
                op, rhs = _OPS[toks[i][0]], _number(toks[i + 1][0])
                i += 2
                lin, quad, const = self.expr(body, start_line)
                if quad:
                    self.fail(start_line, "an indicator implies a linear row")
                e = self.m._add_indicator(binvar, val, 0, op, 0, name)
                g = self.m._gen[e._index]
                g["terms"], g["rhs"] = [(v, c) for v, c in lin], rhs - const + 0.0
                continue
            body = []
            while i < n and toks[i][0] not in _OPS:
                body.append(toks[i][0])
                i += 1
            if i >= n:
                self.fail(start_line, "a constraint without <=, >= or =")
            op = _OPS[toks[i][0]]
            i += 1
            rhs_toks = []
            if i < n and toks[i][0] in ("+", "-"):
                rhs_toks.append(toks[i][0])
                i += 1
            if i >= n or _number(toks[i][0]) is None:
                self.fail(start_line, "a constraint without a numeric right-hand side")
            rhs = _number(toks[i][0]) * (-1.0 if rhs_toks == ["-"] else 1.0)
            i += 1
            lin, quad, const = self.expr(body, start_line)
            c = self.m._add_constr(0, op, 0, name)
            rec = self.m._crec[c._index]
            rec["terms"], rec["quad"], rec["rhs"] = lin, quad, rhs - const + 0.0

    def bounds(self, items):
        for ln, line in items:
            t = line.split()
            if not t:
                continue
            low = [x.lower() for x in t]
            if len(t) == 2 and low[1] == "free":
                r = self.m._vrec[self.var(t[0])._index]
                r[1], r[2] = -INF, INF
            elif len(t) == 3 and t[1] in _OPS:
                a, op, b = t
                if _number(a) is not None and _number(b) is None:  # "5 >= x" is "x <= 5"
                    a, b, op = b, a, {"<": ">", ">": "<", "=": "="}[_OPS[op]]
                else:
                    op = _OPS[op]
                val = _number(b)
                if val is None:
                    self.fail(ln, "a bound that is not a number: %s" % line.strip())
                r = self.m._vrec[self.var(a)._index]
                if op == "=":
                    r[1] = r[2] = val
                elif op == "<":
                    r[2] = val
                else:
                    r[1] = val
            elif len(t) == 5 and t[1] in _OPS and t[3] in _OPS and _OPS[t[1]] == _OPS[t[3]] != "=":
                lo, hi = _number(t[0]), _number(t[4])
                if lo is None or hi is None:
                    self.fail(ln, "a bound that is not a number: %s" % line.strip())
                if _OPS[t[1]] == ">":
                    lo, hi = hi, lo
                r = self.m._vrec[self.var(t[2])._index]
                r[1], r[2] = lo, hi
            else:
                self.fail(ln, "a bound trex cannot read: %s" % line.strip())

    def sos(self, items):
        for ln, line in items:
            t = line.split()
            name = ""
            if t and t[0].endswith(":") and len(t) > 1 and t[1] != "::":
                name, t = t[0][:-1], t[1:]
            if len(t) < 2 or t[1] != "::" or t[0].upper() not in ("S1", "S2"):
                self.fail(ln, "an SOS line trex cannot read: %s" % line.strip())
            vs, ws = [], []
            for item in t[2:]:
                v, _, w = item.rpartition(":")
                if not v or _number(w) is None:
                    self.fail(ln, "an SOS member that is not NAME:WEIGHT: %s" % item)
                vs.append(self.var(v))
                ws.append(_number(w))
            self.m._add_sos(int(t[0][1]), vs, ws, name)

    def general(self, items):
        for ln, line in items:
            t = line.split()
            name = ""
            if t and t[0].endswith(":"):
                name, t = t[0][:-1], t[1:]
            kind = t[2].upper() if len(t) > 4 else ""
            if len(t) < 5 or t[1] != "=" or kind not in ("MAX", "MIN", "ABS", "AND", "OR") or t[3] != "(" or t[-1] != ")":
                raise UnsupportedCall(10012, "%s, line %d: a general constraint trex cannot read: %s" % (self.path, ln, line.strip()))
            args = [a for a in t[4:-1] if a != ","]
            const = None
            vs = []
            for a in args:
                if _number(a) is not None and kind in ("MAX", "MIN"):
                    const = _number(a)
                else:
                    vs.append(self.var(a))
            self.m._add_general(kind, self.var(t[0]), vs, const, name)

    def kinds(self, items, kind):
        for ln, line in items:
            for t in line.split():
                r = self.m._vrec[self.var(t)._index]
                r[3] = kind
                if kind == "B":
                    r[1], r[2] = max(r[1], 0.0), min(r[2], 1.0)


def read_lp(model, path):
    """Fills the empty `model` (a ModelCore) from the LP file at `path`; returns it. Raises
    ModelingError naming the file and line on a malformed file, OSError when unreadable."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    rd = _Reader(model, path)
    sections, current = [], None
    for ln, raw in enumerate(text.splitlines(), 1):
        line = raw.split("\\", 1)[0].strip()
        if not line:
            continue
        kind = next((k for rx, k in _SECTIONS if rx.match(line)), None)
        if kind == "end":
            break
        if kind == "unsupported":
            raise UnsupportedCall(10012, "%s, line %d: the LP section '%s' is not supported by trex" % (path, ln, line))
        if kind:
            current = [kind, []]
            sections.append(current)
            continue
        if current is None:
            rd.fail(ln, "text before the objective section: %s" % line[:60])
        current[1].append((ln, line))
    seen = [k for k, _ in sections]
    if not any(k in ("min", "max") for k in seen):
        raise ModelingError(10012, "%s: no Minimize or Maximize section" % path)
    for kind, items in sections:
        if kind in ("min", "max"):
            model._sense = -1 if kind == "max" else 1
            toks = [t for _, line in items for t in line.split()]
            if toks and toks[0].endswith(":"):
                toks = toks[1:]
            elif len(toks) > 1 and toks[1] == ":":
                toks = toks[2:]
            lin, quad, const = rd.expr(toks, items[0][0] if items else 0, objective=True)
            for v, c in lin:
                model._vrec[v._index][4] += c
            model._objq, model._objcon = quad, const
        elif kind == "rows":
            rd.rows(items)
        elif kind == "bounds":
            rd.bounds(items)
        elif kind in ("bin", "int"):
            rd.kinds(items, "B" if kind == "bin" else "I")
        elif kind == "sos":
            rd.sos(items)
        elif kind == "general":
            rd.general(items)
    model._changed()  # filled directly above: no record or result of the empty model is kept
    return model
