"""Runs one extracted program for `trex eval` and records the model it built.

Usage: trex_eval_runner.py PROGRAM.py

The program runs as __main__ with trex's modelling modules importable (gurobipy, coptpy, and
PuLP with trex as its solver when the program uses PuLP). Afterwards the final model goes to
__trex_final.json: the model in the program's variable `model` (the report's protocol), else
the last model it solved, else the last it created (for PuLP: the last problem it solved, else
an LpProblem left in its globals).

Exit codes: 0 ran to the end, 1 raised, 65 did not compile (syntax error), 66 ran but built
no model, 67 imported a modelling library trex does not emulate (the last line of stderr is
"unsupported-library: NAME"), 68 called outside the emulated surface ("unsupported-call: ...").
"""
import os
import sys

# traceback and re are imported only where used: with their own imports (tokenize, textwrap,
# linecache) and the regular expressions those compile, they cost every program a few
# milliseconds of start-up, and most programs never need them.

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

EXIT_SYNTAX, EXIT_NO_MODEL, EXIT_UNSUPPORTED_LIBRARY, EXIT_UNSUPPORTED_CALL = 65, 66, 67, 68

# Modelling and solver libraries a completion may import that trex does not emulate.
UNEMULATED = {"pyomo", "docplex", "cplex", "xpress", "mip", "ortools", "pyscipopt", "highspy", "cvxpy",
              "mosek", "amplpy", "gekko", "pyopt", "cylp", "swiglpk", "gamspy", "pywraplp", "picos"}


def uses_pulp(source):
    if "pulp" not in source:
        return False
    import re

    return re.search(r"^\s*(?:import\s+pulp|from\s+pulp\b)", source, re.M) is not None


def print_exception(e=None):
    """The traceback of `e` (a syntax error: no frames) or of the exception being handled. A
    program that broke the traceback module still gets the last line, "Type: message"."""
    shown = e if e is not None else sys.exc_info()[1]
    try:
        import traceback

        if e is None:
            traceback.print_exc()
        else:
            traceback.print_exception(type(e), e, None)
    except BaseException:
        print("%s: %s" % (type(shown).__name__, shown), file=sys.stderr)


def final_model(namespace, trex_modeling, pulp_solved):
    model = namespace.get("model")
    if isinstance(model, trex_modeling.ModelCore):
        return model, "variable model"
    if trex_modeling.last_solved() is not None:
        return trex_modeling.last_solved(), "last solved model"
    if trex_modeling.last_model() is not None:
        return trex_modeling.last_model(), "last created model"
    if pulp_solved is not None:
        import pulp
        problems = [v for v in namespace.values() if isinstance(v, pulp.LpProblem)]
        if problems:
            import trex_pulp
            return trex_pulp.to_model(problems[-1])[0], "PuLP problem"
    return None, ""


RECORD = "__trex_final.json"


def main(record=RECORD):
    """Runs the program sys.argv[1]; the final model's record goes to `record` (the warm
    interpreter's warm-up sends it to os.devnull)."""
    path = sys.argv[1]
    with open(path, encoding="utf-8", errors="replace") as f:
        source = f.read()
    try:
        code = compile(source, "completion.py", "exec")
    except (SyntaxError, ValueError) as e:
        print_exception(e)
        return EXIT_SYNTAX
    import trex_modeling

    pulp_used = None
    if uses_pulp(source):
        try:
            import trex_pulp
            pulp_used = trex_pulp.install()
        except ImportError:
            pass  # PuLP is not installed: the program's own import fails and says so

    namespace = {"__name__": "__main__", "__file__": "completion.py"}
    status = 0
    try:
        exec(code, namespace)
    except SystemExit as e:
        if e.code not in (None, 0):
            status = 1
    except trex_modeling.UnsupportedCall as e:
        print_exception()
        print("unsupported-call: %s" % e.message, file=sys.stderr)
        return EXIT_UNSUPPORTED_CALL
    except ImportError as e:
        top = (getattr(e, "name", None) or "").split(".")[0]
        print_exception()
        if top in UNEMULATED:
            print("unsupported-library: %s" % top, file=sys.stderr)
            return EXIT_UNSUPPORTED_LIBRARY
        status = 1
    except BaseException:
        print_exception()
        status = 1
    sys.stdout.flush()
    model, source_of_model = final_model(namespace, trex_modeling, pulp_used)
    if model is None:
        return status or EXIT_NO_MODEL
    try:
        data = model._to_json()
        data["from"] = source_of_model
        import json

        # dumps, not dump: dump encodes in pure Python, chunk by chunk (about 1 ms a program);
        # dumps uses the C encoder and writes the same text.
        text = json.dumps(data, allow_nan=False)
        with open(record, "w") as f:
            f.write(text)
    except trex_modeling.UnsupportedCall as e:  # a general constraint trex cannot state (general.py)
        print_exception()
        print("unsupported-call: %s" % e.message, file=sys.stderr)
        return EXIT_UNSUPPORTED_CALL
    except BaseException:
        print_exception()
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
