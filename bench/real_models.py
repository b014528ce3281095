#!/usr/bin/python3
"""Real-model table: every MPS/LP file that Debian's COIN-OR and GLPK packages ship (and GLPK's
MathProg examples), solved by `trex solve`, the cbc program and glpsol, one process each.

Usage: bench/real_models.py TREX_BINARY OUT.md [--time-limit S] [--raw DIR] [--only SUBSTR ...]
                             [--reps N] [--cheap S] [--from-raw DIR ...]

A run can be cut into chunks (a shared machine's quiet slot is short): each chunk names its
models with --only (repeated) and keeps its --raw DIR; --from-raw DIR1 DIR2 ... then renders the
whole table from the chunks, in model order, with each chunk's load average.

Each tool gets the same wall-clock limit per model. Agreement: same verdict and, for optimal
ones, |a - b| <= 1e-6 max(1, |b|). The time goal (issue 13) is the geometric mean of
trex's time / cbc's time over the MILPs that cbc solves to optimality within the limit.
trex and cbc run alternately, model by model; where both took under --cheap seconds the pair
runs --reps times in all (trex, cbc, trex, cbc, ...) and the medians count.
The cbc program cannot read MathProg: for a .mod its time is glpsol's translation (the same
`glpsol --check --wlp` that `trex solve` runs) plus cbc on the translation, so both columns
go from the same .mod to the answer.
"""
import argparse
import glob
import gzip
import json
import math
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

COIN_DIRS = ["/usr/share/coin/Data/Sample", "/usr/share/coin/Data/Netlib", "/usr/share/coin/Data/miplib3"]
GLPK_DIR = "/usr/share/doc/glpk-utils/examples"
# MathProg examples that read external data (CSV, dBase, SQL) or need a .dat beside them.
MOD_DATA = {"misp.mod": ["misp1.dat"], "pbn/pbn.mod": ["pbn/bucks.dat"], "sudoku.mod": ["sudoku.dat"]}
MOD_SKIP_DIRS = ("csv/", "dbf/", "sql/", "threads/")


def model_files():
    files = []
    for d in COIN_DIRS:
        files += sorted(glob.glob(os.path.join(d, "*.mps")) + glob.glob(os.path.join(d, "*.lp")) +
                        glob.glob(os.path.join(d, "*.mps.gz")))
    files += sorted(glob.glob(os.path.join(GLPK_DIR, "*.mps")) + glob.glob(os.path.join(GLPK_DIR, "*.lp")))
    for mod in sorted(glob.glob(os.path.join(GLPK_DIR, "**/*.mod"), recursive=True)):
        rel = os.path.relpath(mod, GLPK_DIR)
        if rel.startswith(MOD_SKIP_DIRS):
            continue
        files.append(mod)
    return files


# Where the tools run: some MathProg examples write files (tas.ps, graph.eps) into the
# current directory.
WORKDIR = {"path": None}
CPU = {}  # the CPU seconds (user + system) of the last run() call's process, by argv[0]


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(argv, limit):
    """Returns (exit code, output, wall seconds); CPU['last'] gets the process's CPU seconds.
    On a shared machine CPU time is the steadier measure of the two."""
    t0, c0 = time.monotonic(), children_cpu()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=limit + 30, errors="replace",
                           cwd=WORKDIR["path"])
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = -9, (e.stdout or "") if isinstance(e.stdout, str) else ""
    CPU["last"] = children_cpu() - c0
    return rc, out, time.monotonic() - t0


def data_args(path, flag):
    rel = os.path.relpath(path, GLPK_DIR)
    out = []
    for d in MOD_DATA.get(rel, []):
        out += [flag, os.path.join(GLPK_DIR, d)]
    return out


def solve_trex(trex, path, limit):
    argv = [trex, "solve", "--json", "--time-limit", str(limit), path] + data_args(path, "-d")
    rc, out, secs = run(argv, limit)
    status, obj, kind = "error", None, ""
    for line in out.splitlines():
        if line.startswith("{"):
            try:
                j = json.loads(line)
                status, obj = j["status"], j.get("objective")
                INPROC.setdefault(("trex", path), []).append(j.get("seconds"))
            except ValueError:
                pass
    if rc == 2:
        status = "input_error: " + out.strip().splitlines()[-1][:120] if out.strip() else "input_error"
    return status, obj, secs


def translated(path, tmp, limit):
    """A .mod translated by glpsol into LP (for cbc), timed each time: (file or None, wall s, CPU s)."""
    out = os.path.join(tmp, os.path.basename(path) + ".lp")
    if os.path.exists(out):
        os.remove(out)
    rc, _, secs = run(["glpsol", "--check", "-m", path] + data_args(path, "-d") + ["--wlp", out], limit)
    return (out if rc == 0 and os.path.exists(out) else None), secs, CPU["last"]


def solve_cbc(path, limit, tmp):
    """(status, objective, wall s); CPU['last'] gets the CPU seconds (translation included)."""
    src, pre_secs, pre_cpu = path, 0.0, 0.0
    if path.endswith(".mod"):
        src, pre_secs, pre_cpu = translated(path, tmp, limit)
        if src is None:
            CPU["last"] = pre_cpu
            # glpsol killed at the hang guard (limit + 30 s) is a stop at the limit, not a failure.
            return ("time_limit" if pre_secs >= limit else "translation_failed"), None, pre_secs
    rc, out, secs = run(["cbc", src, "-timeMode", "elapsed", "-sec", str(limit), "-solve", "-quit"], limit)
    # The program's own clock, from its start (the file read included) to the end of the solve.
    m = re.search(r"^Total time \(CPU seconds\):\s+(\S+)\s+\(Wallclock seconds\):\s+(\S+)", out, re.M)
    INPROC.setdefault(("cbc", path), []).append(float(m.group(2)) if m else None)
    secs += pre_secs
    CPU["last"] += pre_cpu
    status, obj = "unknown", None
    m = re.search(r"^Result - (.*)$", out, re.M)
    if m:
        r = m.group(1)
        status = ("optimal" if r.startswith("Optimal") else "infeasible" if "infeasible" in r else
                  "unbounded" if "unbounded" in r else "time_limit" if "time" in r.lower() or "Stopped" in r else r)
        m2 = re.search(r"^Objective value:\s+(\S+)", out, re.M)
        if m2 and status in ("optimal", "time_limit"):
            obj = float(m2.group(1))
    else:
        m = re.search(r"^(Optimal|Primal infeasible|Dual infeasible|Stopped|Problem is infeasible)[^\n]*?(objective value\s+(\S+))?$", out, re.M)
        if m:
            w = m.group(1)
            status = {"Optimal": "optimal", "Primal infeasible": "infeasible", "Problem is infeasible": "infeasible",
                      "Dual infeasible": "unbounded", "Stopped": "time_limit"}[w]
            if m.group(3):
                obj = float(m.group(3))
        elif re.search(r"errors on input|Unable to open|not supported|Unknown", out):
            status = "input_error"
    return status, obj, secs


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def solve_pair(trex, path, limit, tmp, reps, cheap):
    """trex and cbc alternately; (trex row, cbc row, repetitions), each row (status, objective,
    median wall s, median CPU s, [wall s of each run]). Status and objective are the first run's."""
    t = solve_trex(trex, path, limit) + (CPU.get("last", 0.0),)
    c = solve_cbc(path, limit, tmp) + (CPU.get("last", 0.0),)
    tw, tc, cw, cc = [t[2]], [t[3]], [c[2]], [c[3]]
    if norm(c[0]) == "optimal" and max(t[2], c[2]) < cheap:
        for _ in range(reps - 1):
            r = solve_trex(trex, path, limit)
            tw.append(r[2])
            tc.append(CPU["last"])
            r = solve_cbc(path, limit, tmp)
            cw.append(r[2])
            cc.append(CPU["last"])
    return ((t[0], t[1], median(tw), median(tc), tw), (c[0], c[1], median(cw), median(cc), cw), len(tw))


def solve_glpsol(path, limit, tmp):
    outfile = os.path.join(tmp, "glpsol.out")
    if os.path.exists(outfile):
        os.remove(outfile)
    if path.endswith(".mod"):
        argv = ["glpsol", "-m", path] + data_args(path, "-d")
    elif path.endswith(".lp"):
        argv = ["glpsol", "--lp", path]
    else:
        argv = ["glpsol", "--mps", path]
    rc, out, secs = run(argv + ["--tmlim", str(int(limit)), "-o", outfile], limit)
    if path.endswith(".mps") and not os.path.exists(outfile):  # not fixed MPS: try free
        rc, out, secs = run(["glpsol", "--freemps", path, "--tmlim", str(int(limit)), "-o", outfile], limit)
    if not os.path.exists(outfile):  # killed at the hang guard (limit + 30 s), or refused
        return ("time_limit" if rc == -9 else "input_error"), None, secs
    text = open(outfile, errors="replace").read()
    m = re.search(r"^Status:\s+(.*)$", text, re.M)
    st = m.group(1).strip() if m else "unknown"
    status = {"OPTIMAL": "optimal", "INTEGER OPTIMAL": "optimal", "INFEASIBLE (FINAL)": "infeasible",
              "INTEGER EMPTY": "infeasible", "UNBOUNDED": "unbounded", "INTEGER NON-OPTIMAL": "time_limit",
              "UNDEFINED": "time_limit", "INTEGER UNDEFINED": "time_limit"}.get(st, st.lower())
    if "PROBLEM HAS NO PRIMAL FEASIBLE SOLUTION" in out.upper():
        status = "infeasible"
    if "PROBLEM HAS UNBOUNDED SOLUTION" in out.upper() or "LP HAS UNBOUNDED PRIMAL SOLUTION" in out.upper():
        status = "unbounded"
    # "Objective:  z = 261 (MINimum)", or "Objective:  0 (MINimum)" for a model without an
    # objective (a feasibility model: its optimum is 0, as trex and cbc report it).
    m = re.search(r"^Objective:\s+(?:\S+ = )?(\S+)", text, re.M)
    obj = float(m.group(1)) if m and status in ("optimal", "time_limit") else None
    return status, obj, secs


def objective_rhs(path):
    """The RHS value on the objective row of an MPS file (0 when none): GLPK adds it to the
    objective where COIN-OR and trex subtract it, so glpsol's value is compared minus twice it."""
    if not path.endswith(".mps"):
        return 0.0
    obj, section, v = None, "", 0.0
    for line in open(path, errors="replace"):
        if not line.strip() or line.startswith("*"):
            continue
        if not line[0].isspace():
            section = line.split()[0].upper()
            continue
        f = line.split()
        if section == "ROWS" and obj is None and f and f[0].upper() == "N":
            obj = f[1] if len(f) > 1 else None
        elif section == "RHS" and obj is not None:
            k = len(f) % 2
            for i in range(k, len(f) - 1, 2):
                if f[i] == obj:
                    try:
                        v = float(f[i + 1])
                    except ValueError:
                        pass
    return v


def norm(status):
    if status.startswith("time_limit"):
        return "time_limit"
    if status.startswith("input_error"):
        return "refused"
    return status


def agree(a_status, a_obj, b_status, b_obj):
    a, b = norm(a_status), norm(b_status)
    if a != b:
        if {a, b} <= {"infeasible", "unbounded", "infeasible_or_unbounded"} and "infeasible_or_unbounded" in (a, b):
            return True
        return False
    if a == "optimal":
        return a_obj is not None and b_obj is not None and abs(a_obj - b_obj) <= 1e-6 * max(1.0, abs(b_obj))
    return True


def fmt(v):
    return "" if v is None else "%.10g" % v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trex")
    ap.add_argument("out")
    ap.add_argument("--time-limit", type=float, default=60)
    ap.add_argument("--raw", default="")
    ap.add_argument("--only", action="append", default=[],
                    help="only the model files whose path contains this (repeatable: any of them)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--conditions", default="", help="a sentence on how the machine was shared, for the table")
    ap.add_argument("--cheap", type=float, default=10.0)
    ap.add_argument("--from-raw", nargs="+", default=[],
                    help="re-render OUT from --raw directories' real_models.json (one run, or the chunks of "
                         "one) without solving trex and cbc again (glpsol is re-run only where an older parser "
                         "may have misread it)")
    args = ap.parse_args()
    args.trex = os.path.abspath(args.trex)  # the tools run in a temporary directory
    rows = []
    load_start = " ".join(open("/proc/loadavg").read().split()[:3])
    with tempfile.TemporaryDirectory() as tmp:
        WORKDIR["path"] = tmp
        if args.from_raw:
            raw_rows, loads = [], []
            for d in args.from_raw:
                with open(os.path.join(d, "real_models.json")) as f:
                    raw = json.load(f)
                loads.append((raw["load_start"], raw["load_end"]))
                raw_rows += raw["rows"]
            order = {p: k for k, p in enumerate(model_files())}
            raw_rows.sort(key=lambda r: order.get(r["file"], len(order)))
            load_start, load_end = loads[0][0], loads[-1][1]
            CHUNKS["loads"] = loads
            for r in raw_rows:
                for tool, v in r.get("in_process", {}).items():
                    INPROC[(tool, r["file"])] = v
                g = r["glpsol"]
                # What an older parser may have misread: GLPK's "INTEGER UNDEFINED", an optimum
                # without its objective line, a "time limit" long before the limit.
                if g[0] == "integer undefined":  # the same output, as the parser now reads it
                    g = ["time_limit"] + list(g[1:])
                if ((norm(g[0]) == "optimal" and g[1] is None) or
                        (norm(g[0]) == "time_limit" and g[2] < args.time_limit / 2)):
                    g = list(solve_glpsol(r["file"], args.time_limit, tmp)) + [CPU.get("last", 0.0)]
                rows.append((r["file"], r["trex"], r["cbc"], g))
                if norm(r["cbc"][0]) == "optimal":
                    is_mip(args.trex, r["file"])  # the time table's question, while the work directory exists
        for path in [] if args.from_raw else model_files():
            if args.only and not any(o in path for o in args.only):
                continue
            t, c, n = solve_pair(args.trex, path, args.time_limit, tmp, args.reps, args.cheap)
            g = solve_glpsol(path, args.time_limit, tmp) + (CPU.get("last", 0.0),)
            rows.append((path, t, c, g))
            if norm(c[0]) == "optimal":
                is_mip(args.trex, path)  # the time table's question, cached while the work directory exists
            print("%-60s trex %-22s %-14s %6.2fs | cbc %-12s %-14s %6.2fs | glpsol %-12s %-14s %6.2fs | x%d load %s" %
                  (path[-60:], t[0][:22], fmt(t[1]), t[2], c[0][:12], fmt(c[1]), c[2], g[0][:12], fmt(g[1]), g[2], n,
                   open("/proc/loadavg").read().split()[0]), file=sys.stderr, flush=True)
    if not args.from_raw:
        load_end = " ".join(open("/proc/loadavg").read().split()[:3])
    if args.raw and not args.from_raw:
        os.makedirs(args.raw, exist_ok=True)
        with open(os.path.join(args.raw, "real_models.json"), "w") as f:
            json.dump({"load_start": load_start, "load_end": load_end,
                       "rows": [{"file": p, "trex": t, "cbc": c, "glpsol": g,
                                 "in_process": {"trex": INPROC.get(("trex", p), []),
                                                "cbc": INPROC.get(("cbc", p), [])}}
                                for p, t, c, g in rows]}, f, indent=1)
    lines = ["# Real models: trex, the cbc program and glpsol on the models Debian ships", "",
             "Every MPS/LP file of Debian's COIN-OR sample data (`%s`) and of GLPK's examples (`%s`), and GLPK's "
             "MathProg examples (translated by glpsol: `trex solve FILE.mod`; cbc reads glpsol's `--wlp` translation, "
             "and its time includes that translation). One process per model and tool, %g s wall-clock limit each; "
             "trex and cbc alternate model by model, and where both took under %g s the pair ran %d times in all "
             "(trex, cbc, trex, cbc, ...): the times are medians. Agreement: same verdict and objective within "
             "1e-6 relative. %s; the machine has %d CPUs.%s" %
             (COIN_DIRS[0], GLPK_DIR, args.time_limit, args.cheap, args.reps, load_text(load_start, load_end),
              os.cpu_count(), " " + args.conditions if args.conditions else ""), "",
             "| model | trex | obj | s | cbc | obj | s | glpsol | obj | s | trex = cbc | trex = glpsol |",
             "|---|---|---:|---:|---|---:|---:|---|---:|---:|:-:|:-:|"]
    ratios = []
    worst = (0, "")
    n_agree_c = n_agree_g = 0
    notes = []
    for path, t, c, g in rows:
        name = path.replace("/usr/share/coin/Data/", "coin/").replace(GLPK_DIR + "/", "glpk/")
        v = objective_rhs(path)
        g_obj = g[1] - 2 * v if (g[1] is not None and v) else g[1]
        if v and g[1] is not None:
            notes.append("- `%s`: RHS %g on the objective row; glpsol's objective %s is compared as %s "
                         "(GLPK adds the RHS, COIN-OR and trex subtract it)." % (name, v, fmt(g[1]), fmt(g_obj)))
        ac, ag = agree(t[0], t[1], c[0], c[1]), agree(t[0], t[1], g[0], g_obj)
        n_agree_c += ac
        n_agree_g += ag
        lines.append("| %s | %s | %s | %.2f | %s | %s | %.2f | %s | %s | %.2f | %s | %s |" % (
            name, t[0][:60], fmt(t[1]), t[2], c[0], fmt(c[1]), c[2], g[0], fmt(g[1]), g[2],
            "yes" if ac else "**no**", "yes" if ag else "**no**"))
    lines += ["", "trex agrees with cbc on %d of %d models and with glpsol on %d of %d." % (n_agree_c, len(rows), n_agree_g, len(rows)), ""]
    lines += notes + [""]
    lines.append("## Time to optimality against the cbc program")
    lines.append("")
    lines.append("MILPs (integer columns) that cbc solves to optimality within the limit, both whole processes "
                 "(reading included; for a .mod glpsol's translation included on both sides), timed alternately on "
                 "the same machine, medians of the runs counted in the last column. CPU = user + system seconds of the "
                 "processes, steadier than wall time on a shared machine.")
    lines.append("")
    lines.append("In process: each tool's own clock inside the process, medians of the same runs: trex's `seconds` "
                 "(the solve call, the model already read) and the cbc program's `Total time (Wallclock seconds)` "
                 "(from its start, its file read included); for a .mod glpsol's translation is outside both. "
                 "Ratios floor both times at 0.01 s, as the CPU ratios do (the clocks print 2-3 digits).")
    lines.append("")
    lines.append("| model | trex wall s | cbc wall s | wall ratio | trex CPU s | cbc CPU s | CPU ratio | trex in-process s "
                 "| cbc in-process s | in-process ratio | runs |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    cpu_ratios = []
    worst_cpu = (0, "")
    in_ratios = []
    worst_in = (0, "")
    for path, t, c, g in rows:
        if norm(c[0]) != "optimal" or not is_mip(args.trex, path):
            continue
        r = max(t[2], 1e-3) / max(c[2], 1e-3)
        rc = max(t[3], 1e-2) / max(c[3], 1e-2)
        ratios.append(r)
        cpu_ratios.append(rc)
        if r > worst[0]:
            worst = (r, path)
        if rc > worst_cpu[0]:
            worst_cpu = (rc, path)
        ti = [v for v in INPROC.get(("trex", path), []) if v is not None]
        ci = [v for v in INPROC.get(("cbc", path), []) if v is not None]
        cells = "| | |"
        if ti and ci:
            ri = max(median(ti), 1e-2) / max(median(ci), 1e-2)
            in_ratios.append(ri)
            if ri > worst_in[0]:
                worst_in = (ri, path)
            cells = "%.3f | %.3f | %.2f" % (median(ti), median(ci), ri)
        lines.append("| %s | %.3f | %.3f | %.2f | %.3f | %.3f | %.2f | %s | %d |" % (
            os.path.basename(path), t[2], c[2], r, t[3], c[3], rc, cells, len(t[4])))
    if ratios:
        gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        gmc = math.exp(sum(math.log(r) for r in cpu_ratios) / len(cpu_ratios))
        lines += ["", "Geometric mean over %d MILPs (goal <= 1.0, no model worse than 2): wall **%.2f** (worst %.2f, %s); "
                  "CPU **%.2f** (worst %.2f, %s)." % (len(ratios), gm, worst[0], os.path.basename(worst[1]),
                                                    gmc, worst_cpu[0], os.path.basename(worst_cpu[1]))]
        if in_ratios:
            gmi = math.exp(sum(math.log(r) for r in in_ratios) / len(in_ratios))
            lines[-1] += (" In process, over the %d of them with both clocks: **%.2f** (worst %.2f, %s)." %
                          (len(in_ratios), gmi, worst_in[0], os.path.basename(worst_in[1])))
    lines += ["", "Reproduce: `bench/real_models.py build/trex bench/results/real_models.md --time-limit %g --reps %d "
              "--cheap %g`" % (args.time_limit, args.reps, args.cheap)]
    if len(CHUNKS.get("loads", [])) > 1:
        lines[-1] += (" (here in %d chunks, each with `--only MODEL ... --raw DIR`, rendered with `--from-raw DIR ...`)"
                      % len(CHUNKS["loads"]))
    tmp_out = args.out + ".tmp"
    with open(tmp_out, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp_out, args.out)


_mip_cache = {}
# Each run's in-process time, by (tool, model): trex's "seconds" (its solve call: the model
# already read; for a .mod glpsol's translation excluded) and the cbc program's "Total time
# (Wallclock seconds)" (its file read included); None where the tool printed none.
INPROC = {}
CHUNKS = {}  # with --from-raw over several directories: "loads", each chunk's (start, end) load


def load_text(start, end):
    loads = CHUNKS.get("loads", [])
    if len(loads) > 1:
        return ("The run was cut into %d chunks; load average (1, 5, 15 min) at the start and end of each: %s"
                % (len(loads), "; ".join("%d: %s -> %s" % (k + 1, a, b) for k, (a, b) in enumerate(loads))))
    return "Load average (1, 5, 15 min) at the start: %s; at the end: %s" % (start, end)


def has_integer_columns(path):
    """Integer columns in an LP file (a General/Integer/Binary section with a name in it) or an
    MPS file (an INTORG marker, or a BV/LI/UI bound)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:
        text = f.read()
    if ".mps" in path:
        return bool(re.search(r"'INTORG'", text) or re.search(r"^\s*(BV|LI|UI)\s", text, re.M))
    return bool(re.search(r"^\s*(generals?|gen|integers?|binary|binaries|bin)\s*\n\s*[^\s\\]", text,
                          re.M | re.I) and not re.search(r"^\s*(generals?|gen|integers?|binary|binaries|bin)"
                                                          r"\s*\n\s*end\s*$", text, re.M | re.I))


def is_mip(trex, path):
    """Whether the model has integer columns; a .mod is translated by glpsol first. Read from the
    files, not from `trex solve --time-limit`: that limit covers reading too."""
    if path not in _mip_cache:
        src = path
        if path.endswith(".mod"):
            src = translated(path, WORKDIR["path"], 600)[0]
        _mip_cache[path] = src is not None and has_integer_columns(src)
    return _mip_cache[path]


if __name__ == "__main__":
    main()
