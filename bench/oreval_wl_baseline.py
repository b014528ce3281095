"""The straightforward Python ORGEval checker, as a baseline for `trex eval equiv`.

For each pair of LP files: parse both (a small reader for the LP files Gurobi writes, since
gurobipy is not available), turn single-variable constraints into bounds, build a networkx
bipartite graph (variable nodes labelled by type, bounds and objective coefficient; constraint
nodes by sense and right-hand side; edges by coefficient), and compare
networkx.weisfeiler_lehman_graph_hash of the two (3 iterations, the networkx default). This is
how the released harness does it, with gurobipy's reader replaced.

Usage: /usr/bin/python3 oreval_wl_baseline.py PAIRS.tsv [REPEATS]
Prints one JSON line: pairs, equivalent, wall and CPU seconds (medians over repeats), checks per
second of each.
"""
import json
import re
import statistics
import sys
import time

import networkx as nx

# Quadratic brackets stand alone ("+ [ 2 x[0] * x[1] ] / 2"); brackets inside names do not.
TOKEN = re.compile(r"\s*([<>=]=?|[+\-]|\[(?=\s)|\](?=\s|$)|\^|\*|/|[A-Za-z_][^\s:+\-*/^<>=]*|[0-9.]+(?:[eE][+\-]?[0-9]+)?)")


def num(s):
    return float(s)


def parse_expr(text):
    """Linear part {name: coef}, quadratic part {(a, b): coef} and a constant."""
    lin, quad, const = {}, {}, 0.0
    toks = TOKEN.findall(text)
    i, sign, in_quad, coef = 0, 1.0, False, None
    pending = []
    while i < len(toks):
        t = toks[i]
        if t == "+":
            sign = 1.0
        elif t == "-":
            sign = -1.0
        elif t == "[":
            in_quad = True
        elif t == "]":
            in_quad = False
            if i + 2 < len(toks) and toks[i + 1] == "/":
                half = num(toks[i + 2])
                for k in pending:
                    quad[k] /= half
                i += 2
            pending = []
        elif re.match(r"^[0-9.]", t):
            coef = (coef or 1.0) * num(t)
        else:
            c = sign * (coef if coef is not None else 1.0)
            if in_quad:
                if i + 2 < len(toks) and toks[i + 1] == "^":
                    key = (t, t)
                    i += 2
                elif i + 2 < len(toks) and toks[i + 1] == "*":
                    key = tuple(sorted((t, toks[i + 2])))
                    i += 2
                else:
                    key = None
                if key:
                    quad[key] = quad.get(key, 0.0) + c
                    pending.append(key)
                else:
                    lin[t] = lin.get(t, 0.0) + c
            elif t == "Constant":
                const += c
            else:
                lin[t] = lin.get(t, 0.0) + c
            sign, coef = 1.0, None
        i += 1
    if coef is not None:
        const += sign * coef
    return lin, quad, const


def read_lp(path):
    sections = {"obj": [], "st": [], "bounds": [], "gen": [], "bin": []}
    sense, cur = 1, None
    with open(path) as f:
        for raw in f:
            line = raw.split("\\", 1)[0].rstrip()
            low = line.strip().lower()
            if not low:
                continue
            if low in ("minimize", "maximize", "minimise", "maximise", "min", "max"):
                sense, cur = (-1 if low.startswith("max") else 1), "obj"
            elif low in ("subject to", "such that", "st", "s.t."):
                cur = "st"
            elif low in ("bounds", "bound"):
                cur = "bounds"
            elif low in ("generals", "general", "integers", "gen"):
                cur = "gen"
            elif low in ("binaries", "binary", "bin"):
                cur = "bin"
            elif low == "end":
                break
            else:
                sections[cur].append(line)
    obj_text = " ".join(sections["obj"])
    if ":" in obj_text.split("[")[0]:
        obj_text = obj_text.split(":", 1)[1]
    obj, qobj, _ = parse_expr(obj_text)
    cons, buf = [], ""
    for line in sections["st"]:
        buf += " " + line
        m = re.search(r"(<=|>=|=<|=>|=|<|>)\s*([+\-]?\s*[0-9.eE+\-]+|[+\-]?inf\w*)\s*$", buf)
        if m:
            body = buf[: m.start()]
            name, _, body = body.rpartition(":") if ":" in body else ("", "", body)
            lin, quad, const = parse_expr(body)
            rhs = float(m.group(2).replace(" ", "")) - const
            op = {"<=": "<", "=<": "<", "<": "<", ">=": ">", "=>": ">", ">": ">", "=": "="}[m.group(1)]
            cons.append((lin, quad, op, rhs))
            buf = ""
    names = set(obj) | {v for c in cons for v in c[0]} | {v for k in qobj for v in k}
    for c in cons:
        for k in c[1]:
            names |= set(k)
    lb = {v: 0.0 for v in names}
    ub = {v: float("inf") for v in names}
    vtype = {v: "C" for v in names}
    for line in sections["bounds"]:
        toks = line.split()
        if len(toks) == 2 and toks[1].lower() == "free":
            lb[toks[0]], ub[toks[0]] = -float("inf"), float("inf")
        elif len(toks) == 5:
            lb[toks[2]], ub[toks[2]] = float(toks[0]), float(toks[4])
        elif len(toks) == 3:
            v, op, val = toks
            val = float(val)
            if op == "=":
                lb[v] = ub[v] = val
            elif op in (">=", "=>"):
                lb[v] = val
            else:
                ub[v] = val
    for line in sections["gen"]:
        for v in line.split():
            vtype[v] = "I"
    for line in sections["bin"]:
        for v in line.split():
            vtype[v] = "I"
            lb[v], ub[v] = max(lb.get(v, 0.0), 0.0), min(ub.get(v, 1.0), 1.0)
    vtype.pop("Constant", None)
    return sense, obj, qobj, cons, lb, ub, vtype


def r(x):
    return "%.12g" % x


def graph(path):
    sense, obj, qobj, cons, lb, ub, vtype = read_lp(path)
    rows = []
    for lin, quad, op, rhs in cons:
        lin = {v: c for v, c in lin.items() if c != 0}
        if len(lin) == 1 and not quad:  # a single-variable constraint is a bound
            (v, c), = lin.items()
            lo, hi = (rhs / c if op in (">", "=") else -float("inf")), (rhs / c if op in ("<", "=") else float("inf"))
            if c < 0:
                lo, hi = hi, lo
                lo = -float("inf") if lo == float("inf") else lo
                hi = float("inf") if hi == -float("inf") else hi
            lb[v], ub[v] = max(lb.get(v, 0.0), lo), min(ub.get(v, float("inf")), hi)
        elif lin or quad:
            rows.append((lin, quad, op, rhs))
    g = nx.Graph()
    g.graph["sense"] = sense
    for v in vtype:
        g.add_node(("v", v), label="V|%s|%s|%s|%s" % (vtype[v], r(lb[v]), r(ub[v]), r(sense * obj.get(v, 0.0))))
    for (a, b), c in qobj.items():
        g.add_edge(("v", a), ("v", b), w="Q" + r(c))
    for k, (lin, quad, op, rhs) in enumerate(rows):
        g.add_node(("c", k), label="C|%s|%s" % (op, r(rhs)))
        for v, c in lin.items():
            g.add_edge(("c", k), ("v", v), w=r(c))
        for (a, b), c in quad.items():
            g.add_node(("q", k, a, b), label="Q")
            g.add_edge(("c", k), ("q", k, a, b), w=r(c))
            g.add_edge(("q", k, a, b), ("v", a), w="q")
            g.add_edge(("q", k, a, b), ("v", b), w="q")
    return g


def equivalent(a, b):
    ga, gb = graph(a), graph(b)
    if ga.number_of_nodes() != gb.number_of_nodes() or ga.number_of_edges() != gb.number_of_edges():
        return False
    ha = nx.weisfeiler_lehman_graph_hash(ga, node_attr="label", edge_attr="w", iterations=3)
    hb = nx.weisfeiler_lehman_graph_hash(gb, node_attr="label", edge_attr="w", iterations=3)
    return ha == hb and ga.graph["sense"] == gb.graph["sense"]


def main():
    pairs = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    times, cpu, same = [], [], 0
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        same = sum(1 for a, b in pairs if equivalent(a, b))
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    sec, csec = statistics.median(times), statistics.median(cpu)
    print(json.dumps({"pairs": len(pairs), "equivalent": same, "seconds": sec, "cpu_seconds": csec,
                      "checks_per_s": len(pairs) / sec, "checks_per_cpu_s": len(pairs) / csec}))


if __name__ == "__main__":
    main()
