"""Shared parts of the two Python baselines for `trex data gen` (bench/run_ordata_bench.sh).

Both baselines do the per-sample work of a Python corpus script, one sample at a time:
generate (draw the data and build the model), solve, render the statement, write the LP
file, re-solve the written model and compare status and objective. To solve the same
instances as trex they read the instance data (model and story) that `ordata_bench
export-specs` wrote, and redraw as many random numbers as the instance has data, so the
family logic itself is not reimplemented: that makes the baselines, if anything, faster
than a full Python pipeline.

Run by /usr/bin/python3 (Debian's python3-pulp and python3-scipy).
"""
import json
import math
import multiprocessing
import os
import random
import sys
import tempfile
import time


def load_specs(path, count):
    specs = []
    with open(path) as f:
        for line in f:
            specs.append(json.loads(line))
            if len(specs) == count:
                break
    return specs


def num(v):
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return repr(float(v))


def bound(v):
    return math.inf if v == "inf" else -math.inf if v == "-inf" else float(v)


def generate(spec, rng):
    """Draws the instance's data again (one draw per datum) and returns the model arrays."""
    for _ in range(len(spec["vars"]) + sum(len(r[3]) for r in spec["rows"])):
        rng.uniform(0, 1)
    names = [v[0] for v in spec["vars"]]
    lower = [bound(v[1]) for v in spec["vars"]]
    upper = [bound(v[2]) for v in spec["vars"]]
    vtype = [v[3] for v in spec["vars"]]
    cost = [float(v[4]) for v in spec["vars"]]
    rows = [(r[0], bound(r[1]), bound(r[2]), [(int(t[0]), float(t[1])) for t in r[3]]) for r in spec["rows"]]
    return {"name": spec["id"], "max": spec["sense"] == "max", "names": names, "lower": lower,
            "upper": upper, "vtype": vtype, "cost": cost, "rows": rows}


def _table_md(t):
    s = "| " + t["row_header"] + "".join(" | " + c for c in t["columns"]) + " |\n|"
    s += "---|" * (len(t["columns"]) + 1) + "\n"
    for r, cells in zip(t["rows"], t["cells"]):
        s += "| " + r + "".join(" | " + c for c in cells) + " |\n"
    return s


def _row_sentence(t, i, sep):
    parts = [c[0].lower() + c[1:] + " " + v for c, v in zip(t["columns"], t["cells"][i])]
    return t["rows"][i][0].upper() + t["rows"][i][1:] + ": " + sep.join(parts) + "."


def _compact(t):
    body = "; ".join(r + " " + "/".join(cells) for r, cells in zip(t["rows"], t["cells"]))
    return t["caption"][0].upper() + t["caption"][1:] + " (" + t["row_header"] + ": " + "; ".join(t["columns"]) + "): " + body + "."


def render(story, template, concise):
    """The three phrasing templates of trex (report, narrative, memo) and the concise variant."""
    st = story
    if template == "report":
        s = st["setting"] + "\n\nThe task is to decide " + st["decision"] + ".\n\n"
        for t in st["tables"]:
            s += (_compact(t) + "\n") if concise else (t["caption"] + ":\n\n" + _table_md(t) + "\n")
        s += "".join(f + "\n" for f in st["facts"]) + "\nConstraints:\n"
        s += "".join("- " + r + "\n" for r in st["rules"])
        if st["integrality"]:
            s += "- " + st["integrality"] + "\n"
        s += "\nObjective: " + st["objective"] + ".\n"
    elif template == "narrative":
        s = st["setting"] + " " + " ".join(st["facts"]) + "\n\n"
        for t in st["tables"]:
            if concise:
                s += _compact(t) + "\n"
            else:
                s += t["caption"] + ". " + " ".join(_row_sentence(t, i, ", ") for i in range(len(t["rows"]))) + "\n\n"
        s += " ".join(st["rules"]) + " " + st["integrality"]
        s += "\n\nDetermine " + st["decision"] + " so as to " + st["objective"] + ".\n"
    else:
        s = "To: the planning team at " + st["company"] + " (" + st["industry"] + ")\nGoal: " + st["objective"] + ".\n\n"
        if not concise:
            s += "Background: " + st["setting"] + "\n\n"
        s += "Data:\n"
        for t in st["tables"]:
            if concise:
                s += "- " + _compact(t) + "\n"
            else:
                s += "- " + t["caption"] + ":\n" + "".join("  - " + _row_sentence(t, i, "; ") + "\n" for i in range(len(t["rows"])))
        s += "".join("- " + f + "\n" for f in st["facts"]) + "\nRequirements:\n"
        rules = st["rules"] + ([st["integrality"]] if st["integrality"] else [])
        s += "".join("%d. %s\n" % (k + 1, r) for k, r in enumerate(rules))
        s += "\nPlease decide " + st["decision"] + ".\n"
    lines = [" ".join(l.split()) for l in s.split("\n")]
    return "\n".join(lines).strip() + "\n"


def write_lp(m):
    """CPLEX LP text of the model."""
    names = m["names"]

    def expr(terms):
        out = []
        for j, c in terms:
            out.append(("- " if c < 0 else "+ ") + num(abs(c)) + " " + names[j])
        return " ".join(out) if out else "0 " + names[0]

    s = ("Maximize\n" if m["max"] else "Minimize\n") + " obj: "
    s += expr([(j, c) for j, c in enumerate(m["cost"]) if c != 0]) + "\nSubject To\n"
    for name, lo, hi, terms in m["rows"]:
        e = expr(terms)
        if lo == hi:
            s += " %s: %s = %s\n" % (name, e, num(lo))
        elif lo == -math.inf:
            s += " %s: %s <= %s\n" % (name, e, num(hi))
        elif hi == math.inf:
            s += " %s: %s >= %s\n" % (name, e, num(lo))
        else:
            s += " %s: %s >= %s\n %s_hi: %s <= %s\n" % (name, e, num(lo), name, e, num(hi))
    s += "Bounds\n"
    for n, lo, hi in zip(names, m["lower"], m["upper"]):
        los = "-inf" if lo == -math.inf else num(lo)
        his = "+inf" if hi == math.inf else num(hi)
        s += " %s <= %s <= %s\n" % (los, n, his)
    gen = [n for n, t in zip(names, m["vtype"]) if t == "integer"]
    binv = [n for n, t in zip(names, m["vtype"]) if t == "binary"]
    if gen:
        s += "General\n " + " ".join(gen) + "\n"
    if binv:
        s += "Binary\n " + " ".join(binv) + "\n"
    return s + "End\n"


def agree(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def run_pool(work_fn, specs, processes):
    """Runs work_fn over the specs with `processes` worker processes; returns (wall_s, results)."""
    t0 = time.perf_counter()
    if processes == 1:
        results = [work_fn(s) for s in specs]
    else:
        with multiprocessing.Pool(processes) as pool:
            results = pool.map(work_fn, specs, chunksize=8)
    return time.perf_counter() - t0, results


def main(name, work_fn, init_fn=None):
    if len(sys.argv) != 4:
        sys.exit("usage: %s SPECS.jsonl COUNT PROCESSES" % sys.argv[0])
    specs = load_specs(sys.argv[1], int(sys.argv[2]))
    processes = int(sys.argv[3])
    wall, results = run_pool(work_fn, specs, processes)
    verified = sum(1 for r in results if r == "ok")
    for spec, r in zip(specs, results):
        if r != "ok":
            print("%s: disagrees with trex (%s)" % (spec["id"], r), file=sys.stderr)
    out = {"baseline": name, "processes": processes, "samples": len(specs), "verified": verified,
           "disagreements": sum(1 for r in results if r not in ("ok",)), "wall_s": wall,
           "samples_per_s": len(specs) / wall}
    print(json.dumps(out))
