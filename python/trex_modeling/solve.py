"""Solving a recorded model through trex, the one way every emulated library solves.

  * Inside `trex eval` (TREX_EVAL_CHANNEL_FD set) the model is written to __trex_solve.json
    and a "solve" request goes to the harness over the inherited socket; the harness answers
    with the result of trex's own solvers (the sandbox allows no new processes).
  * Elsewhere the model is written as an LP file (internal names x0.., c0..) and
    `trex solve --json --all` is run: the trex binary from TREX_BINARY or PATH.

Either way the answer is {"status", "objective", "x": [value per variable], "seconds",
"message"}, statuses as `trex solve --json` names them, and for an LP solved to optimality
"duals" [value per row] and "reduced_costs" [value per variable] (Gurobi's Pi and RC, in the
model's own sense), absent otherwise.
"""

import json
import os

from .errors import ModelingError


def solve(model, record, time_limit=None):
    fd = os.environ.get("TREX_EVAL_CHANNEL_FD")
    if fd:
        return _through_channel(int(fd), record, time_limit)
    return _with_binary(record, time_limit)


def _write_record(path, record):
    text = json.dumps(record, allow_nan=False)  # the C encoder; json.dump encodes in Python
    with open(path, "w") as f:
        f.write(text)


def _through_channel(fd, record, time_limit):
    path = "__trex_solve.json"
    _write_record(path, record)
    limit = float(time_limit) if time_limit and float(time_limit) < 1e9 else 1e9
    os.write(fd, ("solve %s %.6g\n" % (path, limit)).encode())
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise ModelingError(10001, "the trex harness closed the solve channel")
        buf += chunk
    return json.loads(buf)


def _with_binary(record, time_limit):
    # Imported here: they cost about 8 ms, a quarter of a sandboxed start-up, and the
    # harness path never needs them.
    import subprocess
    import tempfile

    from .lp_writer import lp_text

    trex = os.environ.get("TREX_BINARY") or "trex"
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "model.lp")
        with open(p, "w") as f:
            f.write(lp_text(record, internal_names=True))
        cmd = [trex, "solve", p, "--json", "--all"]
        if time_limit and float(time_limit) < 1e9:
            cmd += ["--time-limit", str(float(time_limit))]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True)
        except FileNotFoundError:
            raise ModelingError(10009, "trex binary not found: set TREX_BINARY or put trex on PATH")
    if out.returncode not in (0, 3) or not out.stdout.strip():
        raise ModelingError(10001, "trex solve failed: " + out.stderr.strip())
    j = json.loads(out.stdout)
    x = None
    if j.get("objective") is not None:
        vals = j.get("variables", {})
        x = [vals.get("x%d" % i, 0.0) for i in range(len(record["vars"]))]
    out = {"status": j["status"], "objective": j.get("objective"), "x": x, "seconds": j.get("seconds", 0.0),
           "message": j.get("message", "")}
    if x is not None and "duals" in j and "reduced_costs" in j:
        # --all lists every row and variable by its internal name (c0.., x0..).
        out["duals"] = [j["duals"].get("c%d" % k, 0.0) for k in range(len(record["constrs"]))]
        out["reduced_costs"] = [j["reduced_costs"].get("x%d" % i, 0.0) for i in range(len(record["vars"]))]
    return out
