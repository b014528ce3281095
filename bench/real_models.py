#!/usr/bin/python3
"""Real-model table: every MPS/LP file that Debian's COIN-OR and GLPK packages ship (and GLPK's
MathProg examples), solved by `trex solve`, the cbc program and glpsol, one process each.

Usage: bench/real_models.py TREX_BINARY OUT.md [--time-limit S] [--raw DIR] [--only SUBSTR]

Each tool gets the same wall-clock limit per model. Agreement: same verdict and, for optimal
ones, |a - b| <= 1e-6 max(1, |b|). The time goal (issue 13) is the geometric mean of
trex's time / cbc's time over the MILPs that cbc solves to optimality within the limit.
"""
import argparse
import glob
import json
import math
import os
import re
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


def run(argv, limit):
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=limit + 30, errors="replace")
        return p.returncode, p.stdout + p.stderr, time.monotonic() - t0
    except subprocess.TimeoutExpired as e:
        return -9, (e.stdout or "") if isinstance(e.stdout, str) else "", time.monotonic() - t0


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
            except ValueError:
                pass
    if rc == 2:
        status = "input_error: " + out.strip().splitlines()[-1][:120] if out.strip() else "input_error"
    return status, obj, secs


def translated(path, tmp, fmt):
    """A .mod translated by glpsol into LP (for cbc), once."""
    out = os.path.join(tmp, os.path.basename(path) + "." + fmt)
    if not os.path.exists(out):
        subprocess.run(["glpsol", "--check", "-m", path] + data_args(path, "-d") + ["--w" + fmt, out],
                       capture_output=True, text=True)
    return out if os.path.exists(out) else None


def solve_cbc(path, limit, tmp):
    src = path
    if path.endswith(".mod"):
        src = translated(path, tmp, "lp")
        if src is None:
            return "translation_failed", None, 0.0
    rc, out, secs = run(["cbc", src, "-timeMode", "elapsed", "-sec", str(limit), "-solve", "-quit"], limit)
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
    if not os.path.exists(outfile):
        return "input_error", None, secs
    text = open(outfile, errors="replace").read()
    m = re.search(r"^Status:\s+(.*)$", text, re.M)
    st = m.group(1).strip() if m else "unknown"
    status = {"OPTIMAL": "optimal", "INTEGER OPTIMAL": "optimal", "INFEASIBLE (FINAL)": "infeasible",
              "INTEGER EMPTY": "infeasible", "UNBOUNDED": "unbounded", "INTEGER NON-OPTIMAL": "time_limit",
              "UNDEFINED": "time_limit"}.get(st, st.lower())
    if "PROBLEM HAS NO PRIMAL FEASIBLE SOLUTION" in out.upper():
        status = "infeasible"
    if "PROBLEM HAS UNBOUNDED SOLUTION" in out.upper():
        status = "unbounded"
    m = re.search(r"^Objective:\s+\S+ = (\S+)", text, re.M)
    obj = float(m.group(1)) if m and status in ("optimal", "time_limit") else None
    return status, obj, secs


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
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in model_files():
            if args.only and args.only not in path:
                continue
            t = solve_trex(args.trex, path, args.time_limit)
            c = solve_cbc(path, args.time_limit, tmp)
            g = solve_glpsol(path, args.time_limit, tmp)
            rows.append((path, t, c, g))
            print("%-60s trex %-22s %-14s %6.2fs | cbc %-12s %-14s %6.2fs | glpsol %-12s %-14s %6.2fs" %
                  (path[-60:], t[0][:22], fmt(t[1]), t[2], c[0][:12], fmt(c[1]), c[2], g[0][:12], fmt(g[1]), g[2]),
                  file=sys.stderr, flush=True)
    if args.raw:
        os.makedirs(args.raw, exist_ok=True)
        with open(os.path.join(args.raw, "real_models.json"), "w") as f:
            json.dump([{"file": p, "trex": t, "cbc": c, "glpsol": g} for p, t, c, g in rows], f, indent=1)
    lines = ["# Real models: trex, the cbc program and glpsol on the models Debian ships", "",
             "Every MPS/LP file of Debian's COIN-OR sample data (`%s`) and of GLPK's examples (`%s`), and GLPK's "
             "MathProg examples (translated by glpsol: `trex solve FILE.mod`; cbc reads glpsol's `--wlp` translation). "
             "One process per model and tool, %g s wall-clock limit each. Agreement: same verdict and objective within "
             "1e-6 relative. Load average when written: %s." % (COIN_DIRS[0], GLPK_DIR, args.time_limit,
                                                                   " ".join(open("/proc/loadavg").read().split()[:3])), "",
             "| model | trex | obj | s | cbc | obj | s | glpsol | obj | s | trex = cbc | trex = glpsol |",
             "|---|---|---:|---:|---|---:|---:|---|---:|---:|:-:|:-:|"]
    ratios = []
    worst = (0, "")
    n_agree_c = n_agree_g = 0
    for path, t, c, g in rows:
        name = path.replace("/usr/share/coin/Data/", "coin/").replace(GLPK_DIR + "/", "glpk/")
        ac, ag = agree(t[0], t[1], c[0], c[1]), agree(t[0], t[1], g[0], g[1])
        n_agree_c += ac
        n_agree_g += ag
        lines.append("| %s | %s | %s | %.2f | %s | %s | %.2f | %s | %s | %.2f | %s | %s |" % (
            name, t[0][:60], fmt(t[1]), t[2], c[0], fmt(c[1]), c[2], g[0], fmt(g[1]), g[2],
            "yes" if ac else "**no**", "yes" if ag else "**no**"))
    lines += ["", "trex agrees with cbc on %d of %d models and with glpsol on %d of %d." % (n_agree_c, len(rows), n_agree_g, len(rows)), ""]
    lines.append("## Time to optimality against the cbc program")
    lines.append("")
    lines.append("MILPs (trex's status line says integer columns) that cbc solves to optimality within the limit; "
                 "ratio = trex wall s / cbc wall s, both whole processes (reading included).")
    lines.append("")
    lines.append("| model | trex s | cbc s | ratio |")
    lines.append("|---|---:|---:|---:|")
    for path, t, c, g in rows:
        if norm(c[0]) != "optimal" or not is_mip(args.trex, path):
            continue
        r = max(t[2], 1e-3) / max(c[2], 1e-3)
        ratios.append(r)
        if r > worst[0]:
            worst = (r, path)
        lines.append("| %s | %.2f | %.2f | %.2f |" % (os.path.basename(path), t[2], c[2], r))
    if ratios:
        gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        lines += ["", "Geometric mean ratio over %d MILPs: **%.2f** (goal <= 1.0); worst %.2f (%s; goal <= 2)." %
                  (len(ratios), gm, worst[0], os.path.basename(worst[1]))]
    lines += ["", "Reproduce: `bench/real_models.py build/trex bench/results/real_models.md --time-limit %g`" % args.time_limit]
    tmp_out = args.out + ".tmp"
    with open(tmp_out, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp_out, args.out)


_mip_cache = {}


def is_mip(trex, path):
    if path not in _mip_cache:
        p = subprocess.run([trex, "solve", "--time-limit", "0.001", path] + data_args(path, "-d"),
                           capture_output=True, text=True, errors="replace")
        m = re.search(r"variables, (\d+) integer", p.stdout)
        _mip_cache[path] = bool(m and int(m.group(1)) > 0)
    return _mip_cache[path]


if __name__ == "__main__":
    main()
