"""Runs one extracted program for `trex eval` and records the model it built.

Usage: trex_eval_runner.py PROGRAM.py

The program runs as __main__ with the trex gurobipy-compatible module importable. Afterwards
the final model goes to __trex_final.json: the Model in the program's variable `model` (the
report's protocol), else the last Model it created. Exit codes: 0 ran to the end, 1 raised,
65 did not compile (syntax error), 66 ran but built no model.
"""
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    path = sys.argv[1]
    with open(path, encoding="utf-8", errors="replace") as f:
        source = f.read()
    try:
        code = compile(source, "completion.py", "exec")
    except (SyntaxError, ValueError) as e:
        traceback.print_exception(type(e), e, None)
        return 65
    import gurobipy

    namespace = {"__name__": "__main__", "__file__": "completion.py"}
    status = 0
    try:
        exec(code, namespace)
    except SystemExit as e:
        if e.code not in (None, 0):
            status = 1
    except BaseException:
        traceback.print_exc()
        status = 1
    sys.stdout.flush()
    model = namespace.get("model")
    source_of_model = "variable model"
    if not isinstance(model, gurobipy.Model):
        model = gurobipy._last_model
        source_of_model = "last created model"
    if model is None:
        return status or 66
    try:
        data = model._to_json()
        data["from"] = source_of_model
        import json

        with open("__trex_final.json", "w") as f:
            json.dump(data, f, allow_nan=False)
    except BaseException:
        traceback.print_exc()
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
